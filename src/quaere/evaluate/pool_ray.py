"""The evaluation pool on Ray: judge actors pinned one per GPU (``num_gpus=1``) or CPU actors, started
here or found on a running cluster, and :class:`RayPool`, the :class:`~quaere.evaluate.executor.Executor`
that hands them an evaluation's work (:mod:`.pool_run`).

Ray does the placing: it starts each actor on a node with a free GPU, sets that actor's
``CUDA_VISIBLE_DEVICES`` to it, restarts an actor that dies (``max_restarts``) and fails the calls that
were in flight, which the run gives to another actor. Actors are named ``judge-<device>-<pool>-<i>`` in the
``quaere`` namespace, so every process that joins the cluster (a campaign's ``quaere eval``, a hook's
confirmation) finds the same judges.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayError

from quaere.evaluate.device import DeviceProbe
from quaere.evaluate.executor import Judging
from quaere.evaluate.judging import Device, JudgeJob
from quaere.evaluate.pool import PoolError, PoolSpec
from quaere.evaluate.pool_actor import ActorInfo, JudgeActor, make_bundle
from quaere.evaluate.pool_run import PoolRun
from quaere.records import DeviceInfo

NAMESPACE = "quaere"
READY_TIMEOUT_S = 300.0
"""How long the pool waits for its first actor to start (a Ray worker, quaere's imports)."""
STRAGGLER_S = 30.0
"""How much longer it waits for the others before going on without them."""
AUTH_ENV = ("RAY_AUTH_MODE",)
CLUSTER_POOL = "cluster"
"""The pool id of judges started on a running cluster: detached, they stay until ``ray stop``."""


def _join_ray(spec: PoolSpec, device: Device) -> bool:
    """Start (local) or join (address) Ray unless this process already did; True when it did it here."""
    if ray.is_initialized():
        return False
    quiet: dict[str, Any] = {"namespace": NAMESPACE, "logging_level": "ERROR", "log_to_driver": False}
    try:
        if spec.local:
            cpus = os.cpu_count() or 1
            ray.init(num_cpus=max(cpus, spec.size or 0) if device == "cpu" else cpus, include_dashboard=False, **quiet)
        else:
            ray.init(address=spec.address, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = "a local Ray instance" if spec.local else f"the Ray cluster at '{spec.address}'"
        raise PoolError(f"could not start or reach {where}: {exc}") from None
    return True


def _default_size(device: Device) -> int:
    resources = ray.cluster_resources()
    if device == "cuda":
        return int(resources.get("GPU", 0))
    return max(1, int(resources.get("CPU", 1)) // 2)


def _existing(device: Device) -> list[str]:
    """Names of the judges for ``device`` already registered in the cluster (any pool)."""
    prefix = f"judge-{device}-"
    named = ray.util.list_named_actors(all_namespaces=True)
    return sorted(a["name"] for a in named if a.get("namespace") == NAMESPACE and a["name"].startswith(prefix))


def create_actors(device: Device, count: int, pool_id: str, *, detached: bool, restarts: int,
                  cache_dir: Path | None) -> dict[str, Any]:
    """``count`` judge actors for ``device`` (one GPU each for 'cuda'), or the ones of those names that exist."""
    remote = ray.remote(concurrency_groups={"probe": 1})(JudgeActor)
    actors = {}
    for index in range(count):
        name = f"judge-{device}-{pool_id}-{index}"
        actors[name] = remote.options(
            name=name, namespace=NAMESPACE, get_if_exists=True, lifetime="detached" if detached else None,
            num_cpus=1, num_gpus=1 if device == "cuda" else 0, max_restarts=restarts, max_task_retries=0,
        ).remote(name, device, str(cache_dir) if cache_dir else None)
    return actors


def ready_actors(actors: dict[str, Any], timeout_s: float) -> dict[str, ActorInfo]:
    """The actors that answer, described (where they run, their device): the first within ``timeout_s``,
    the others within ``STRAGGLER_S`` after it (a judge whose GPU or node is gone must not hold up every
    evaluation for the whole start-up time)."""
    probes = {actor.describe.options(concurrency_group="probe").remote(): name for name, actor in actors.items()}
    first, rest = ray.wait(list(probes), num_returns=1, timeout=timeout_s)
    later, _ = ray.wait(rest, num_returns=len(rest), timeout=STRAGGLER_S) if first and rest else ([], [])
    done = [*first, *later]
    infos = {}
    for ref in done:
        try:
            infos[probes[ref]] = ray.get(ref)
        except RayError:
            continue
    return infos


def start_pool(spec: PoolSpec, device: Device, cache_dir: Path | None = None, *, restarts: int = 3,
               ready_timeout_s: float = READY_TIMEOUT_S) -> RayPool:
    """The pool ``spec`` names, for tasks on ``device``: a local one with its own actors, or the judges of a
    running cluster (started there, detached, one per GPU, when it has none yet). ``restarts``: how often
    Ray restarts a dead actor of a pool started here."""
    started = _join_ray(spec, device)
    actors: dict[str, Any] = {}
    try:
        if spec.local:
            available = _default_size(device)
            size = spec.size or available
            if device == "cuda" and not 0 < size <= available:
                raise PoolError(f"--pool {spec}: this machine has {available} GPU(s) for the judges")
            actors = create_actors(device, size, uuid.uuid4().hex[:8], detached=False, restarts=restarts,
                                   cache_dir=cache_dir)
        else:
            names = _existing(device)
            if names:
                actors = {name: ray.get_actor(name, namespace=NAMESPACE) for name in names}
            else:
                size = _default_size(device)
                if size < 1:
                    raise PoolError(f"the Ray cluster at '{spec.address}' has no GPU for a cuda pool")
                actors = create_actors(device, size, CLUSTER_POOL, detached=True, restarts=-1, cache_dir=None)
        infos = ready_actors(actors, ready_timeout_s)
        if not infos:
            raise PoolError(f"no judge of the pool answered within {ready_timeout_s:g} s")
    except BaseException:
        if spec.local:
            for actor in actors.values():
                ray.kill(actor, no_restart=True)
        if started:
            ray.shutdown()
        raise
    return RayPool({n: actors[n] for n in sorted(infos)}, infos, device, owned=spec.local, started_ray=started)


class RayPool:
    """The pool as an :class:`~quaere.evaluate.executor.Executor`; several evaluations (threads) may use it
    at once. ``owned``: its actors were started by this process and are killed by :meth:`close`."""

    def __init__(self, actors: dict[str, Any], infos: dict[str, ActorInfo], device: Device, *, owned: bool,
                 started_ray: bool) -> None:
        self.actors, self.infos, self.device = actors, infos, device
        self.owned, self.started_ray = owned, started_ray

    @property
    def address(self) -> str:
        """The cluster's address, for processes that should join this pool (``QUAERE_POOL``)."""
        return ray.get_runtime_context().gcs_address

    def client_env(self) -> dict[str, str]:
        """What a process started from here needs besides the address to join: Ray's authentication mode,
        which ``ray.init`` set in this process's environment when it started the cluster (the token itself
        stays in the user's ``~/.ray``)."""
        return {key: os.environ[key] for key in AUTH_ENV if key in os.environ}

    def probe(self, device: Device) -> DeviceProbe:
        if device != self.device:
            return DeviceProbe(DeviceInfo(name="none"), False,
                               f"the pool's judges are {self.device} actors, and this task runs on {device}")
        first = self.infos[sorted(self.infos)[0]]
        return first.probe

    @contextmanager
    def open(self, job: JudgeJob) -> Iterator[Judging]:
        key = uuid.uuid4().hex
        run = PoolRun(dict(self.actors), ray.put(make_bundle(key, job)), key, job)
        try:
            yield run
        finally:
            run.release()

    def close(self) -> None:
        if self.owned:
            for actor in self.actors.values():
                ray.kill(actor, no_restart=True)
        if self.started_ray:
            ray.shutdown()
