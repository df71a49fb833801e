"""Where the judge work of an evaluation runs: the seam between :func:`~quaere.evaluate.run.run_evaluation`
(build, audit, the record) and the judges.

:class:`LocalExecutor` is the default and today's path: one judge in this process tree, every correctness
scenario and benchmark configuration in turn. A pool (:mod:`quaere.evaluate.pool`) spreads the same work
over Ray actors. Either way each benchmark configuration is timed whole by one judge on one device, since
ratios are only meaningful within one device.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from quaere.evaluate.device import DeviceProbe, probe_device
from quaere.evaluate.judging import Device, JudgeJob, JudgeSession, SessionReport, check_scenarios
from quaere.records import Placement, Scenario, ScenarioVerdict, Timing

if TYPE_CHECKING:
    from quaere.evaluate.run import Progress


@dataclass(frozen=True)
class TimedScenario:
    """One benchmark configuration's timings, and where all of them were taken."""

    scenario: Scenario
    timings: tuple[Timing, ...]
    placement: Placement


class Judging(Protocol):
    """One candidate's judge work, open until its context ends."""

    def check(self, scenarios: Sequence[Scenario], progress: Progress) -> tuple[ScenarioVerdict, ...]:
        """Verdicts on ``scenarios``, in their order."""
        ...

    def time(self, scenarios: Sequence[Scenario], progress: Progress) -> tuple[TimedScenario, ...]:
        """Each configuration timed (every implementation, interleaved, on one device), in their order."""
        ...

    def report(self) -> SessionReport:
        """Isolation, run-time findings and notes of every judge that worked so far."""
        ...


class Executor(Protocol):
    """Runs the judge work of evaluations."""

    def probe(self, device: Device) -> DeviceProbe:
        """Is the task's ``device`` ('cpu', 'cuda') where the judges run, and what is it."""
        ...

    def open(self, job: JudgeJob) -> AbstractContextManager[Judging]:
        """Judging for ``job``; every process it started is gone when the context ends."""
        ...


def local_placement(device: Device, environment: Mapping[str, str]) -> Placement:
    """This process tree's device: the CPU, or the first GPU ``CUDA_VISIBLE_DEVICES`` names (device 0)."""
    if device == "cpu":
        return Placement(worker="local", node=socket.gethostname(), device="cpu")
    visible = environment.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return Placement(worker="local", node=socket.gethostname(), device=f"GPU {visible or '0'}")


class LocalJudging:
    """One :class:`JudgeSession` in this process tree doing everything in turn."""

    def __init__(self, session: JudgeSession, placement: Placement) -> None:
        self.session, self.placement = session, placement

    def check(self, scenarios: Sequence[Scenario], progress: Progress) -> tuple[ScenarioVerdict, ...]:
        progress.begin("correctness", len(scenarios))
        verdicts = check_scenarios(self.session, scenarios, (),
                                   lambda v: progress.advance(f"{v.scenario_id}: {v.verdict.value}"))
        return tuple(verdicts)

    def time(self, scenarios: Sequence[Scenario], progress: Progress) -> tuple[TimedScenario, ...]:
        progress.begin("timing", len(scenarios))
        timed = []
        for scenario in scenarios:
            timings = tuple(self.session.time(scenario))
            timed.append(TimedScenario(scenario, timings, self.placement))
            progress.advance(f"{scenario.id}: {timings[0].status.value if timings else '?'}")
        return tuple(timed)

    def report(self) -> SessionReport:
        return self.session.report()


class LocalExecutor:
    """The sequential path: one judge, in this process tree, on this machine's device."""

    def __init__(self, cache: Path, environment: Mapping[str, str]) -> None:
        self.cache, self.environment = cache, dict(environment)

    def probe(self, device: Device) -> DeviceProbe:
        return probe_device(device)

    @contextmanager
    def open(self, job: JudgeJob) -> Iterator[Judging]:
        session = JudgeSession(job, self.cache, self.environment)
        try:
            yield LocalJudging(session, local_placement(job.device, self.environment))
        except BaseException as exc:
            session.close(type(exc))  # interrupted or failing: the judge is killed, not waited for
            raise
        session.close()
