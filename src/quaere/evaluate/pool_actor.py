"""The pool's judge actor: a trusted process that runs :class:`~quaere.evaluate.judging.JudgeSession` for
whichever evaluation sends it work, one unit at a time, on the one GPU Ray pinned it to.

It never loads candidate code: like ``quaere eval`` itself it starts a judge process, which starts the
sandboxed runners. An evaluation sends a :class:`JobBundle` (the built libraries' and the task folder's
bytes, so an actor on another machine needs no shared file system); the actor writes them under its own
cache, named by their sha256, and checks them again on every use.

Ray is applied in :mod:`.pool_ray` (``ray.remote(JudgeActor)``); this module imports it only to learn
where the actor runs, so it is tested without a cluster.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from quaere.evaluate.device import DeviceProbe, probe_device
from quaere.evaluate.judging import Device, JudgeJob, JudgeSession, SessionReport, check_scenarios
from quaere.evaluate.options import default_cache_dir
from quaere.records import Placement, Scenario, ScenarioVerdict, Timing


@dataclass(frozen=True)
class JobBundle:
    """A judge job and the bytes its paths name; ``key`` tells one evaluation's work from another's."""

    key: str
    job: JudgeJob
    kernels: Mapping[str, tuple[str, bytes]]
    """Implementation -> (file name, the built library's bytes)."""
    task_files: Mapping[str, bytes]
    """The task folder's files by relative path (its identity's files: no byte-code caches)."""


def make_bundle(key: str, job: JudgeJob) -> JobBundle:
    from quaere.store.identity import task_files

    kernels = {impl: (Path(path).name, Path(path).read_bytes()) for impl, path in job.kernels.items()}
    files = {p.relative_to(job.task_folder).as_posix(): p.read_bytes() for p in task_files(job.task_folder)}
    return JobBundle(key=key, job=job, kernels=kernels, task_files=files)


def _digest(files: Mapping[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + len(files[name]).to_bytes(8, "little") + files[name])
    return digest.hexdigest()


def _holds(folder: Path, files: Mapping[str, bytes]) -> bool:
    """``folder`` has exactly these bytes at these names (a cache entry someone rewrote is not reused)."""
    try:
        return all((folder / name).read_bytes() == data for name, data in files.items())
    except OSError:
        return False


def _write_folder(folder: Path, files: Mapping[str, bytes]) -> Path:
    """``folder`` holding ``files``: reused when it still holds them, else written aside and renamed in
    (judges of the same node may write the same bundle at once: a rename onto a folder fails, never mixes)."""
    if _holds(folder, files):
        return folder
    scratch = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(scratch, ignore_errors=True)
    for name, data in files.items():
        target = scratch / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    try:
        scratch.rename(folder)
    except OSError:  # there already: another judge's copy, or a rewritten one that must go
        if _holds(folder, files):
            shutil.rmtree(scratch, ignore_errors=True)
            return folder
        stale = folder.with_name(f".{folder.name}.{os.getpid()}.stale")
        folder.rename(stale)
        scratch.rename(folder)
        shutil.rmtree(stale, ignore_errors=True)
    return folder


def materialize(bundle: JobBundle, cache: Path) -> JudgeJob:
    """The bundle's job with its paths on this machine: the task folder and libraries under ``cache``."""
    root = cache / "pool"
    root.joinpath("tasks").mkdir(parents=True, exist_ok=True)
    root.joinpath("kernels").mkdir(parents=True, exist_ok=True)
    task = _write_folder(root / "tasks" / _digest(bundle.task_files), bundle.task_files)
    kernels = {}
    for impl, (name, data) in bundle.kernels.items():
        folder = _write_folder(root / "kernels" / hashlib.sha256(data).hexdigest(), {name: data})
        kernels[impl] = str(folder / name)
    return replace(bundle.job, task_folder=task, kernels=kernels)


JUDGE_DEATH_GRACE_S = 2.0
"""How long an actor waits before reporting a unit during which its judge died. When Ray kills an actor,
its judge (a child process) can die a moment before the actor itself (seen in tests/pool: 1 run in 3 got
the killed actor's answer "the judge killed by SIGKILL", an out-of-memory verdict on the candidate).
Waiting lets such a death reach the caller as a lost actor (its scenarios go to another judge); a judge
killed while the actor lives on (the OOM killer) is reported as before, this much later."""


@dataclass(frozen=True)
class ActorInfo:
    """Who an actor is, where it runs, and what its device is."""

    name: str
    device: Device
    """The kind of task it judges: 'cpu' or 'cuda'."""
    placement: Placement
    probe: DeviceProbe


@dataclass(frozen=True)
class UnitResult:
    """What one unit of work returned: verdicts or one configuration's timings, and the session's report."""

    placement: Placement
    report: SessionReport
    verdicts: tuple[ScenarioVerdict, ...] = ()
    timings: tuple[Timing, ...] = ()


def ray_placement(name: str, device: Device) -> Placement:
    """This actor's node and, for a GPU actor, the GPU Ray assigned it (its index on the node)."""
    import ray

    node = ray.util.get_node_ip_address()
    if device == "cpu":
        return Placement(worker=name, node=node, device="cpu")
    gpus = ray.get_runtime_context().get_accelerator_ids().get("GPU", [])
    return Placement(worker=name, node=node, device=f"GPU {','.join(gpus) or '?'}")


class JudgeActor:
    """One judge seat of the pool. Ray runs its units one at a time (``max_concurrency`` 1), so a GPU never
    has two judges timing on it; :meth:`describe` answers in a concurrency group of its own.

    Between units of the same evaluation it keeps that evaluation's judge (and runners) alive; a unit of
    another evaluation closes it first, so at most one judge per actor exists at any time."""

    def __init__(self, name: str, device: Device, cache_dir: str | None = None,
                 placement: Placement | None = None) -> None:
        self.name, self.device = name, device
        self.environment = dict(os.environ)  # this process's entry point: Ray set CUDA_VISIBLE_DEVICES here
        self.cache = Path(cache_dir) if cache_dir else default_cache_dir()
        self.placement = placement or ray_placement(name, device)
        self.current: tuple[str, JudgeSession] | None = None
        self.death_grace_s = JUDGE_DEATH_GRACE_S
        self.sleep: Callable[[float], None] = time.sleep

    def describe(self) -> ActorInfo:
        return ActorInfo(self.name, self.device, self.placement, probe_device(self.device))

    def _session(self, bundle: JobBundle) -> JudgeSession:
        if self.current is not None and self.current[0] == bundle.key:
            return self.current[1]
        self.release(None)
        if bundle.job.device != self.device:
            raise ValueError(f"{self.name} judges {self.device} tasks; this job's task runs on {bundle.job.device}")
        session = JudgeSession(materialize(bundle, self.cache), self.cache, self.environment)
        self.current = (bundle.key, session)
        return session

    def check(self, bundle: JobBundle, scenarios: Sequence[Scenario], timed_out_before: Sequence[str]) -> UnitResult:
        """Verdicts on ``scenarios`` (see :func:`~quaere.evaluate.judging.check_scenarios`)."""
        session = self._session(bundle)
        deaths = session.judge_deaths
        verdicts = check_scenarios(session, scenarios, timed_out_before, lambda _: None)
        self._grace_after_death(session, deaths)
        return UnitResult(self.placement, session.report(), verdicts=tuple(verdicts))

    def time(self, bundle: JobBundle, scenario: Scenario) -> UnitResult:
        """One benchmark configuration, every implementation interleaved by this actor's one judge."""
        session = self._session(bundle)
        deaths = session.judge_deaths
        timings = tuple(session.time(scenario))
        self._grace_after_death(session, deaths)
        return UnitResult(self.placement, session.report(), timings=timings)

    def _grace_after_death(self, session: JudgeSession, deaths_before: int) -> None:
        if session.judge_deaths > deaths_before:
            self.sleep(self.death_grace_s)

    def release(self, key: str | None) -> None:
        """Close the judge of evaluation ``key`` (any judge when None) if it is the one open here."""
        if self.current is not None and (key is None or self.current[0] == key):
            _, session = self.current
            self.current = None
            session.close()
