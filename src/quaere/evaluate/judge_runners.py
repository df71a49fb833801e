"""The judge's runners: one process per native implementation (the candidate, the initial kernel), started
on first use, replaced after a death, and killed (whole process group) when the evaluation ends.

A candidate that cannot be loaded (missing entry point, crashing constructor, forbidden system call at
load time) fails once: the failure is remembered and given to every later scenario rather than restarting
forever. The candidate's runner is the only process that ever holds candidate code; the initial kernel is
timed in a runner of its own and the comparisons in the judge, so neither shares a process with it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from quaere.evaluate import isolation
from quaere.evaluate.maps import parse_maps
from quaere.evaluate.runner_client import RunnerConfig, RunnerLost, RunnerProcess
from quaere.evaluate.runtime_guard import LOG_ENV
from quaere.records import Isolation, Verdict


@dataclass(frozen=True)
class RunnerSettings:
    device: str
    entry: str
    kernels: dict[str, str]
    """Built library by implementation name ('candidate', 'initial')."""
    log_dir: Path
    base_env: dict[str, str]
    guard_env: dict[str, str]
    start_timeout_s: float
    sandbox: bool = True
    threads: bool = False
    unreadable: tuple[str, ...] = ()
    """Folders no runner may read, even beneath one of its read roots (the store's keys)."""
    hidden: tuple[str, ...] = ()
    """Files and folders carved out of every runner's read roots besides the import path's packages: other Pythons'
    packages, the banned families' libraries (:func:`quaere.evaluate.foreign_files.runner_hidden`)."""


@dataclass
class Runners:
    settings: RunnerSettings
    live: dict[str, RunnerProcess] = field(default_factory=dict)
    failures: dict[str, RunnerLost] = field(default_factory=dict)
    started: int = 0
    isolation: Isolation = field(default_factory=lambda: Isolation(separate_process=True))
    trusted_objects: tuple[str, ...] = ()
    """Real paths of the files mapped in the candidate's runner before its library was loaded."""

    def get(self, impl: str) -> RunnerProcess:
        """The live runner of ``impl``, started (and its library loaded) if needed; raises RunnerLost."""
        if impl in self.failures:
            raise self.failures[impl]
        runner = self.live.get(impl)
        if runner is not None and runner.alive():
            return runner
        if runner is not None:
            runner.close()
        library = self.settings.kernels.get(impl)
        if not library:
            raise RunnerLost(Verdict.HARNESS_ERROR, f"no built kernel for '{impl}'")
        runner = self._spawn(impl, library)
        try:
            runner.start()
        except RunnerLost as lost:
            runner.close()
            self.failures[impl] = RunnerLost(lost.verdict, f"while loading {impl}: {lost.detail}")
            raise self.failures[impl] from None
        if impl == "candidate":
            self.isolation = runner.isolation
            before = parse_maps(runner.maps_before)
            self.trusted_objects = tuple(sorted({os.path.realpath(m.path) for m in before if m.is_file}))
        self.live[impl] = runner
        return runner

    def drop(self, impl: str) -> None:
        """Kill ``impl``'s runner (after a fault or a timeout); the next :meth:`get` starts a fresh one."""
        runner = self.live.pop(impl, None)
        if runner is not None:
            runner.close()

    def close(self) -> None:
        for impl in list(self.live):
            self.drop(impl)

    def _spawn(self, impl: str, library: str) -> RunnerProcess:
        self.started += 1
        scratch = self.settings.log_dir / f"runner-{impl}-{self.started}"
        scratch.mkdir(parents=True, exist_ok=True)
        # No package but quaere, no banned library's file: a runner needs none, and a candidate could read a
        # library's bytes there and load its kernels by hand.
        reads = isolation.read_roots([library], self.settings.base_env, os.getcwd(), self.settings.unreadable,
                                     packages=False, hidden=self.settings.hidden)
        # The dlopen guard opens its log before the sandbox is applied: the runner keeps that descriptor and
        # needs no write access to the log's folder. Only the candidate's runner logs where the parent reads.
        writes = (str(scratch), "/dev")
        guard_env = dict(self.settings.guard_env)
        if impl != "candidate" and LOG_ENV in guard_env:
            guard_env[LOG_ENV] = str(scratch / "runtime-guard.log")
        config = RunnerConfig(
            device=self.settings.device, library=library, entry=self.settings.entry,
            policy=isolation.policy(self.settings.sandbox, self.settings.threads, reads, writes),
            env=isolation.runner_env(self.settings.base_env, scratch, guard_env),
            stderr_path=self.settings.log_dir / f"runner-{impl}-{self.started}.stderr",
            start_timeout_s=self.settings.start_timeout_s,
        )
        return RunnerProcess(config, cwd=scratch)
