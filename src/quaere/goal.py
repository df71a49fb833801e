"""The goal: a predicate over the latest evaluation of the current candidate, checked per scenario.

Met when every correctness scenario passed and every benchmark configuration matched by a goal target
reaches its target ratio against the target's baseline. Never an average, never a model's opinion.
An evaluation of another content hash than the current candidate file does not count (``stale``); a
configuration whose baseline could not be timed fails with that reason, it never passes silently.

A configuration that misses by less than its measured spread is a *near miss*: :func:`near_misses`
names them, and :func:`check_goal_with_retime` re-times just those through a :class:`Retimer` and
decides on the fresh timing.
"""

from __future__ import annotations

import fnmatch
import math
import time
from collections.abc import Sequence
from enum import Enum
from typing import Protocol

from pydantic import Field

from quaere.records import BenchmarkResult, Evaluation, Record, Timing, TimingStatus, Verdict
from quaere.task.spec import GoalTarget, TaskSpec


class GoalState(str, Enum):
    MET = "met"
    UNMET = "unmet"
    STALE = "stale"  # the current file was never evaluated, other versions were: it changed since
    NO_EVALUATION = "no_evaluation"


class Shortfall(str, Enum):
    """Why one benchmark configuration does not count as reaching its target."""

    BELOW_TARGET = "below_target"
    BASELINE_UNAVAILABLE = "baseline_unavailable"  # e.g. FA3 not installed: a skip is not a pass
    CANDIDATE_NOT_TIMED = "candidate_not_timed"  # crashed, hung or failed while timed
    NOT_BENCHMARKED = "not_benchmarked"  # the evaluation holds no timing of this configuration
    FASTER_THAN_ROOFLINE = "faster_than_roofline"  # timed below the physical floor: the number is not credible


class FailingScenario(Record):
    """A correctness scenario that did not pass."""

    scenario_id: str
    verdict: Verdict
    detail: str = ""


class FailingBenchmark(Record):
    """A benchmark configuration that does not reach one of its targets."""

    scenario_id: str
    baseline: str
    target_ratio: float
    ratio: float = Field(description="Measured speedup over the baseline; NaN when it could not be measured.")
    ratio_spread: float = Field(description="Uncertainty of the ratio from both spreads (IQR/median); NaN if unknown.")
    shortfall: Shortfall
    detail: str = ""

    @property
    def near_miss(self) -> bool:
        """Below target by less than the measured spread: to be re-timed before it counts as missed."""
        return (
            self.shortfall is Shortfall.BELOW_TARGET
            and math.isfinite(self.ratio_spread)
            and self.target_ratio - self.ratio < self.ratio_spread
        )


class GoalStatus(Record):
    """Outcome of the goal check, with every failing item and its numbers."""

    state: GoalState
    candidate_hash: str
    evaluated_hash: str = Field(default="", description="Hash of the evaluation judged ('' when none).")
    evaluated_at: float = Field(default=math.nan, description="Unix time of the judged evaluation.")
    problems: tuple[str, ...] = Field(default=(), description="Build, audit or run failures of the evaluation.")
    failing_scenarios: tuple[FailingScenario, ...] = ()
    failing_benchmarks: tuple[FailingBenchmark, ...] = ()
    scenarios_checked: int = 0
    benchmarks_checked: int = 0
    retimed: tuple[str, ...] = Field(default=(), description="Configurations re-timed before this verdict.")

    @property
    def met(self) -> bool:
        return self.state is GoalState.MET


class Retimer(Protocol):
    """Times again, without correctness, just the named benchmark configurations of the current candidate."""

    def retime(self, benchmark_ids: Sequence[str]) -> Evaluation: ...


def is_timing_only(evaluation: Evaluation) -> bool:
    """A re-timing run: it built and ran, timed some configurations and checked no correctness."""
    return evaluation.built and evaluation.ran and not evaluation.correctness and bool(evaluation.benchmarks)


def _ratio_spread(result: BenchmarkResult, baseline: str, ratio: float) -> float:
    """First-order bound of the ratio's relative uncertainty: the sum of both relative spreads."""
    parts = []
    for timing in (result.timing("candidate"), result.timing(baseline)):
        if timing is None or not (timing.median_ms > 0) or not math.isfinite(timing.spread_ms):
            return math.nan
        parts.append(timing.spread_ms / timing.median_ms)
    return ratio * sum(parts)


def _unmeasured(timing: Timing | None) -> str:
    if timing is None:
        return "not timed"
    return f"{timing.status.value}{': ' + timing.detail if timing.detail else ''}"


def _judge_benchmark(result: BenchmarkResult, target: GoalTarget) -> FailingBenchmark | None:
    base = dict(scenario_id=result.scenario_id, baseline=target.baseline, target_ratio=target.ratio)
    candidate, baseline = result.timing("candidate"), result.timing(target.baseline)
    if candidate is None or candidate.status is not TimingStatus.MEASURED:
        return FailingBenchmark(
            **base,
            ratio=math.nan,
            ratio_spread=math.nan,
            shortfall=Shortfall.CANDIDATE_NOT_TIMED,
            detail=f"candidate {_unmeasured(candidate)}",
        )
    if baseline is None or baseline.status is not TimingStatus.MEASURED:
        return FailingBenchmark(
            **base,
            ratio=math.nan,
            ratio_spread=math.nan,
            shortfall=Shortfall.BASELINE_UNAVAILABLE,
            detail=f"baseline '{target.baseline}' {_unmeasured(baseline)}",
        )
    ratio = result.ratio(target.baseline)
    spread = _ratio_spread(result, target.baseline, ratio)
    if result.suspect:
        return FailingBenchmark(
            **base,
            ratio=ratio,
            ratio_spread=spread,
            shortfall=Shortfall.FASTER_THAN_ROOFLINE,
            detail=f"candidate median {candidate.median_ms:.4g} ms is below the roofline floor "
            f"{result.bound_ms:.4g} ms",
        )
    if not ratio >= target.ratio:
        return FailingBenchmark(**base, ratio=ratio, ratio_spread=spread, shortfall=Shortfall.BELOW_TARGET)
    return None


def _merged_benchmarks(full: Evaluation, later: Sequence[Evaluation]) -> dict[str, BenchmarkResult]:
    """Benchmarks of the full evaluation, each replaced by its latest re-timing when there is one."""
    results = {b.scenario_id: b for b in full.benchmarks}
    for evaluation in later:
        results.update({b.scenario_id: b for b in evaluation.benchmarks})
    return results


def _problems(evaluation: Evaluation) -> list[str]:
    if not evaluation.built:
        last = (evaluation.build.log_tail.strip().splitlines() or ["(no log)"])[-1]
        return [f"build failed: {last}"]
    problems = [f"audit: {f.rule}: {f.evidence}" for f in evaluation.audit]
    if not evaluation.ran:
        problems.append("nothing was run (no device): correctness and timing are unknown")
    elif not evaluation.correctness:
        problems.append("no correctness scenario was run")
    return problems


def check_goal(
    spec: TaskSpec,
    evaluations: Sequence[Evaluation],
    candidate_hash: str,
    *,
    expected_correctness: Sequence[str] | None = None,
    expected_benchmarks: Sequence[str] | None = None,
) -> GoalStatus:
    """Judge the goal of ``spec`` on the latest evaluation of ``candidate_hash`` (pure).

    ``evaluations`` in ledger order. Only evaluations of this content hash count: when there are none but
    other versions were evaluated, the verdict is ``stale`` (the file changed since it was evaluated); an
    evaluation of a side file does not hide the current file's own verdict. Re-timing runs (no correctness,
    some benchmarks) of the same hash made after the latest full evaluation replace its timings
    configuration by configuration. When the
    ``expected_*`` id lists are given, a scenario missing from the evaluation fails too.
    """
    if not evaluations:
        return GoalStatus(state=GoalState.NO_EVALUATION, candidate_hash=candidate_hash)
    same = [e for e in evaluations if e.candidate_hash == candidate_hash]
    if not same:  # other versions were evaluated, this file never: its verdict cannot be borrowed
        latest = evaluations[-1]
        return GoalStatus(
            state=GoalState.STALE,
            candidate_hash=candidate_hash,
            evaluated_hash=latest.candidate_hash,
            evaluated_at=latest.created_at,
        )
    latest = same[-1]
    full_index = max((i for i, e in enumerate(same) if not is_timing_only(e)), default=None)
    if full_index is None:
        return GoalStatus(
            state=GoalState.UNMET,
            candidate_hash=candidate_hash,
            evaluated_hash=candidate_hash,
            evaluated_at=latest.created_at,
            problems=("only re-timing runs exist: run a full evaluation",),
        )
    full = same[full_index]
    problems = _problems(full)
    failing = [FailingScenario(scenario_id=v.scenario_id, verdict=v.verdict, detail=v.detail) for v in full.failing()]
    seen = {v.scenario_id for v in full.correctness}
    failing += [
        FailingScenario(scenario_id=i, verdict=Verdict.NOT_RUN, detail="missing from the evaluation")
        for i in expected_correctness or ()
        if i not in seen
    ]
    benchmarks = _merged_benchmarks(full, same[full_index + 1 :]) if full.ran and full.built else {}
    ids = list(expected_benchmarks) if expected_benchmarks is not None else list(benchmarks)
    failing_benchmarks: list[FailingBenchmark] = []
    checked = 0
    timed = bool(benchmarks)
    if not timed and full.ran and full.built and failing:
        # The evaluator times only a correct candidate: one line says so, rather than one per configuration.
        problems.append("benchmarks not timed: every correctness scenario must pass first")
    for target in spec.goal.targets if timed or not failing else ():
        matched = [i for i in ids if fnmatch.fnmatchcase(i, target.scenarios)]
        if not matched and full.ran and full.built:
            problems.append(f"goal target '{target.scenarios}' vs {target.baseline} matches no timed configuration")
        for scenario_id in matched:
            checked += 1
            result = benchmarks.get(scenario_id)
            if result is None:
                failing_benchmarks.append(
                    FailingBenchmark(
                        scenario_id=scenario_id,
                        baseline=target.baseline,
                        target_ratio=target.ratio,
                        ratio=math.nan,
                        ratio_spread=math.nan,
                        shortfall=Shortfall.NOT_BENCHMARKED,
                        detail="no timing of this configuration in the evaluation",
                    )
                )
            elif (miss := _judge_benchmark(result, target)) is not None:
                failing_benchmarks.append(miss)
    met = not problems and not failing and not failing_benchmarks
    return GoalStatus(
        state=GoalState.MET if met else GoalState.UNMET,
        candidate_hash=candidate_hash,
        evaluated_hash=candidate_hash,
        evaluated_at=full.created_at,
        problems=tuple(problems),
        failing_scenarios=tuple(failing),
        failing_benchmarks=tuple(failing_benchmarks),
        scenarios_checked=len(full.correctness),
        benchmarks_checked=checked,
    )


def near_misses(status: GoalStatus) -> list[str]:
    """Ids of configurations below target by less than their measured spread (each id once, in order)."""
    ids: list[str] = []
    for miss in status.failing_benchmarks:
        if miss.near_miss and miss.scenario_id not in ids:
            ids.append(miss.scenario_id)
    return ids


def check_goal_with_retime(
    spec: TaskSpec,
    evaluations: Sequence[Evaluation],
    candidate_hash: str,
    retimer: Retimer,
    *,
    expected_correctness: Sequence[str] | None = None,
    expected_benchmarks: Sequence[str] | None = None,
) -> GoalStatus:
    """Check the goal; when the only shortfalls are near misses, re-time them once and decide on that.

    A near miss next to a hard failure is not re-timed: the goal is unmet either way.
    """
    kwargs = dict(expected_correctness=expected_correctness, expected_benchmarks=expected_benchmarks)
    status = check_goal(spec, evaluations, candidate_hash, **kwargs)
    retime_ids = near_misses(status)
    hard = (
        status.problems
        or status.failing_scenarios
        or any(m.scenario_id not in retime_ids for m in status.failing_benchmarks)
    )
    if status.state is not GoalState.UNMET or not retime_ids or hard:
        return status
    fresh = retimer.retime(retime_ids)
    if fresh.candidate_hash != candidate_hash or not is_timing_only(fresh):
        why = fresh.note or "no timing came back"
        return status.model_copy(update={"problems": (*status.problems, f"re-timing did not run: {why}")})
    rechecked = check_goal(spec, [*evaluations, fresh], candidate_hash, **kwargs)
    return rechecked.model_copy(update={"retimed": tuple(retime_ids)})


# -- rendering ------------------------------------------------------------------------------------------


def _fmt_ratio(value: float) -> str:
    return f"{value:.3f}x" if math.isfinite(value) else "n/a"


def _benchmark_line(miss: FailingBenchmark, retimed: tuple[str, ...]) -> str:
    if miss.shortfall is Shortfall.BELOW_TARGET:
        spread = f" ±{miss.ratio_spread:.3f}" if math.isfinite(miss.ratio_spread) else ""
        note = ""
        if miss.scenario_id in retimed:
            note = " (re-timed: still below)"
        elif miss.near_miss:
            note = " (near miss: within the spread, re-time with `quaere goal --retime`)"
        return (
            f"  {miss.scenario_id}: {_fmt_ratio(miss.ratio)}{spread} vs {miss.baseline}, "
            f"target {miss.target_ratio:.3f}x{note}"
        )
    target = f"target {miss.target_ratio:.3f}x"
    return f"  {miss.scenario_id}: {miss.shortfall.value} vs {miss.baseline} ({target}): {miss.detail}"


def render_goal(status: GoalStatus, now: float | None = None) -> str:
    """Concise text: the verdict, then every failing item with its numbers."""
    short = status.candidate_hash[:12]
    if status.state is GoalState.NO_EVALUATION:
        return f"goal: NO EVALUATION — candidate {short} was never evaluated; run `quaere eval`."
    if status.state is GoalState.STALE:
        age = ""
        if now is not None and math.isfinite(status.evaluated_at):
            age = f", {max(0.0, now - status.evaluated_at) / 60:.0f} min ago"
        return (
            f"goal: STALE — the latest evaluation is of {status.evaluated_hash[:12]}{age}, but the candidate "
            f"file is now {short}; run `quaere eval` on it."
        )
    when = (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(status.evaluated_at))
        if math.isfinite(status.evaluated_at)
        else "?"
    )
    lines = [f"goal: {status.state.value.upper()} — candidate {short}, evaluated {when}"]
    lines += [f"problem: {p}" for p in status.problems]
    if status.failing_scenarios:
        lines.append(f"correctness: {len(status.failing_scenarios)} of {status.scenarios_checked} scenarios fail")
        lines += [
            f"  {f.scenario_id}: {f.verdict.value}{': ' + f.detail if f.detail else ''}"
            for f in status.failing_scenarios
        ]
    elif status.scenarios_checked:
        lines.append(f"correctness: all {status.scenarios_checked} scenarios pass")
    if status.failing_benchmarks:
        lines.append(f"benchmarks: {len(status.failing_benchmarks)} of {status.benchmarks_checked} target checks fail")
        lines += [_benchmark_line(m, status.retimed) for m in status.failing_benchmarks]
    elif status.benchmarks_checked:
        lines.append(f"benchmarks: all {status.benchmarks_checked} target checks reached")
    if status.retimed:
        lines.append(f"re-timed before this verdict: {', '.join(status.retimed)}")
    return "\n".join(lines)
