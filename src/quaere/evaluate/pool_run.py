"""One evaluation's judge work on the pool: units handed to the pool's actors as they come free.

Correctness scenarios go out in small units (several per actor, for balance); each benchmark configuration
is one unit, so every implementation of it is timed, interleaved, by one judge on one device. This run
keeps at most one unit in flight per actor; evaluations running at once (other threads, other processes)
queue at the actor, which works through its units one at a time.

Faults: a unit whose actor dies (the actor killed, its node lost) goes back to the head of the queue for
the next free actor; the dead actor rejoins once Ray has restarted it. A unit lost ``MAX_ATTEMPTS`` times,
or left when no actor is alive, gets ``runner_lost`` verdicts or timings: never a pass, and the record
says it is incomplete (:attr:`~quaere.records.Evaluation.lost`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import RayActorError, RayError

from quaere.evaluate.executor import TimedScenario
from quaere.evaluate.judging import JudgeJob, SessionReport, merge_reports
from quaere.evaluate.pool_actor import UnitResult
from quaere.records import Placement, Scenario, ScenarioVerdict, Timing, TimingStatus, Verdict

if TYPE_CHECKING:
    from quaere.evaluate.run import Progress

MAX_ATTEMPTS = 2
"""Actors a unit may lose before its scenarios are marked ``runner_lost``."""
REJOIN_TIMEOUT_S = 120.0
"""How long work waits for a lost actor to come back when no other actor is alive."""
RELEASE_WAIT_S = 5.0
"""How long the end of an evaluation waits for its judges to be closed."""
UNITS_PER_ACTOR = 4
"""Correctness units per actor: small enough to balance uneven scenarios and to lose little with an actor."""


@dataclass
class Unit:
    index: int
    scenarios: tuple[Scenario, ...]
    attempts: int = 0
    lost_on: list[str] = field(default_factory=list)


def stripes(scenarios: Sequence[Scenario], count: int) -> list[Unit]:
    """``scenarios`` dealt into at most ``count`` units, round robin (neighbours are often alike in size)."""
    count = max(1, min(count, len(scenarios)))
    return [Unit(i, tuple(scenarios[i::count])) for i in range(count) if scenarios[i::count]]


Failed = Callable[[Unit, Verdict, str], None]


class PoolRun:
    """:class:`~quaere.evaluate.executor.Judging` on the pool's actors for one evaluation."""

    def __init__(self, actors: dict[str, Any], bundle: Any, key: str, job: JudgeJob) -> None:
        """``actors`` by name (Ray handles); ``bundle`` the object reference of the evaluation's
        :class:`~quaere.evaluate.pool_actor.JobBundle`, whose key is ``key``."""
        self.actors, self.bundle, self.key, self.job = actors, bundle, key, job
        self.reports: list[SessionReport] = []
        self.served: set[str] = set()
        self.incidents: list[str] = []
        """What the record must say about the pool's faults during this evaluation."""

    def check(self, scenarios: Sequence[Scenario], progress: Progress) -> tuple[ScenarioVerdict, ...]:
        progress.begin("correctness", len(scenarios))
        results: dict[int, tuple[ScenarioVerdict, ...]] = {}
        timed_out: list[str] = []

        def submit(actor: Any, unit: Unit) -> Any:
            return actor.check.remote(self.bundle, unit.scenarios, tuple(timed_out))

        def done(unit: Unit, result: UnitResult) -> None:
            results[unit.index] = result.verdicts
            timed_out.extend(v.scenario_id for v in result.verdicts if v.verdict is Verdict.TIMED_OUT)
            for v in result.verdicts:
                progress.advance(f"{v.scenario_id}: {v.verdict.value}")

        def failed(unit: Unit, verdict: Verdict, detail: str) -> None:
            results[unit.index] = tuple(ScenarioVerdict(scenario_id=s.id, verdict=verdict, seed=self.job.seed,
                                                        detail=detail) for s in unit.scenarios)
            for s in unit.scenarios:
                progress.advance(f"{s.id}: {verdict.value}")

        units = stripes(scenarios, UNITS_PER_ACTOR * len(self.actors))
        self._dispatch(units, submit, done, failed)
        order = {s.id: i for i, s in enumerate(scenarios)}
        return tuple(sorted((v for unit in results.values() for v in unit), key=lambda v: order[v.scenario_id]))

    def time(self, scenarios: Sequence[Scenario], progress: Progress) -> tuple[TimedScenario, ...]:
        progress.begin("timing", len(scenarios))
        results: dict[int, TimedScenario] = {}

        def submit(actor: Any, unit: Unit) -> Any:
            return actor.time.remote(self.bundle, unit.scenarios[0])

        def done(unit: Unit, result: UnitResult) -> None:
            results[unit.index] = TimedScenario(unit.scenarios[0], result.timings, result.placement)
            status = result.timings[0].status.value if result.timings else "?"
            progress.advance(f"{unit.scenarios[0].id}: {status}")

        def failed(unit: Unit, verdict: Verdict, detail: str) -> None:
            status = TimingStatus.RUNNER_LOST if verdict is Verdict.RUNNER_LOST else TimingStatus.FAILED
            timings = tuple(Timing(impl=i, status=status, detail=detail) for i in self.job.impls)
            where = Placement(worker=unit.lost_on[-1] if unit.lost_on else "", node="", device="")
            results[unit.index] = TimedScenario(unit.scenarios[0], timings, where)
            progress.advance(f"{unit.scenarios[0].id}: {status.value}")

        self._dispatch([Unit(i, (s,)) for i, s in enumerate(scenarios)], submit, done, failed)
        return tuple(results[i] for i in sorted(results))

    def report(self) -> SessionReport:
        merged = merge_reports(self.reports)
        return replace(merged, notes=(*merged.notes, *self.incidents))

    def release(self) -> None:
        """Close this evaluation's judges on every actor that served it (a dead one has none left). An actor
        busy with another evaluation's units closes it when it gets there, or when their judge replaces it:
        the wait is short so the record is not held up by other evaluations."""
        refs = [self.actors[name].release.remote(self.key) for name in sorted(self.served)]
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=RELEASE_WAIT_S)

    def _dispatch(self, units: list[Unit], submit: Callable[[Any, Unit], Any],
                  done: Callable[[Unit, UnitResult], None], failed: Failed) -> None:
        """Run every unit on the free actors; each ends in ``done`` or ``failed`` exactly once."""
        queue: deque[Unit] = deque(units)
        idle = sorted(self.actors)
        work: dict[Any, tuple[str, Unit]] = {}
        rejoining: dict[Any, str] = {}
        while queue or work:
            while queue and idle:
                name, unit = idle.pop(0), queue.popleft()
                work[submit(self.actors[name], unit)] = (name, unit)
                self.served.add(name)
            if queue and not work and not rejoining:
                self._give_up(queue, failed, "no actor of the pool is alive")
                return
            ready, _ = ray.wait([*work, *rejoining], num_returns=1, timeout=None if work else REJOIN_TIMEOUT_S)
            if not ready:
                self._give_up(queue, failed, f"no actor of the pool came back within {REJOIN_TIMEOUT_S:g} s")
                return
            ref = ready[0]
            if ref in rejoining:
                name = rejoining.pop(ref)
                if _answered(ref):
                    idle.append(name)
                continue
            name, unit = work.pop(ref)
            try:
                result: UnitResult = ray.get(ref)
            except RayActorError as exc:
                unit.attempts += 1
                unit.lost_on.append(name)
                again = "given to another judge" if unit.attempts < MAX_ATTEMPTS else "runner_lost"
                self.incidents.append(f"pool: judge {name} was lost with {len(unit.scenarios)} scenario(s) "
                                      f"in hand ({type(exc).__name__}); {again}")
                rejoining[self.actors[name].describe.options(concurrency_group="probe").remote()] = name
                if unit.attempts < MAX_ATTEMPTS:
                    queue.appendleft(unit)
                else:
                    failed(unit, Verdict.RUNNER_LOST, _lost_detail(unit, exc))
                continue
            except RayError as exc:  # the actor's own code failed (quaere's fault): never a pass
                idle.append(name)
                failed(unit, Verdict.HARNESS_ERROR, f"pool actor {name}: {_first_line(exc)}")
                continue
            idle.append(name)
            self.reports.append(result.report)
            done(unit, result)

    @staticmethod
    def _give_up(queue: deque[Unit], failed: Failed, why: str) -> None:
        while queue:
            unit = queue.popleft()
            failed(unit, Verdict.RUNNER_LOST, f"{why}; lost on: {', '.join(unit.lost_on) or 'none'}")


def _answered(ref: Any) -> bool:
    try:
        ray.get(ref)
        return True
    except RayError:
        return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _lost_detail(unit: Unit, exc: BaseException) -> str:
    return (f"the pool lost this unit's judge {unit.attempts} times (on {', '.join(unit.lost_on)}); "
            f"last: {type(exc).__name__}: {_first_line(exc)}")

