"""Full runs judged against the goal's targets: correctness over every run, each benchmark configuration
pooled over the runs with its margin (:data:`~quaere.goal_records.MARGIN_K`). Pure functions."""

from __future__ import annotations

import fnmatch
import math
import statistics
from collections.abc import Sequence

from quaere.goal_records import (
    SE_PER_IQR,
    Expected,
    FailingBenchmark,
    FailingScenario,
    Shortfall,
    Verdicts,
    lower_bound,
)
from quaere.records import BenchmarkResult, Evaluation, Timing, TimingStatus, Verdict
from quaere.task.spec import GoalTarget, TaskSpec


def _relative_error(timing: Timing) -> float:
    """Relative standard error of one implementation's median time (NaN when it cannot be told)."""
    count = sum(1 for v in timing.samples_ms if math.isfinite(v))
    if not (timing.median_ms > 0) or not math.isfinite(timing.spread_ms) or count < 1:
        return math.nan
    return SE_PER_IQR * timing.spread_ms / math.sqrt(count) / timing.median_ms


def ratio_error(result: BenchmarkResult, baseline: str) -> float:
    """Relative standard error of the ratio: both medians' relative errors in quadrature (NaN if unknown)."""
    parts = []
    for timing in (result.timing("candidate"), result.timing(baseline)):
        parts.append(_relative_error(timing) if timing is not None else math.nan)
    return math.hypot(*parts)


def _unmeasured(timing: Timing | None) -> str:
    if timing is None:
        return "not timed"
    return f"{timing.status.value}{': ' + timing.detail if timing.detail else ''}"


def _hard_shortfall(result: BenchmarkResult, baseline: str) -> tuple[Shortfall, str] | None:
    """A reason this run's timing of the configuration cannot count at all, else None."""
    candidate, base = result.timing("candidate"), result.timing(baseline)
    if candidate is None or candidate.status is not TimingStatus.MEASURED:
        return Shortfall.CANDIDATE_NOT_TIMED, f"candidate {_unmeasured(candidate)}"
    if base is None or base.status is not TimingStatus.MEASURED:
        return Shortfall.BASELINE_UNAVAILABLE, f"baseline '{baseline}' {_unmeasured(base)}"
    if result.suspect:
        return Shortfall.FASTER_THAN_ROOFLINE, (
            f"candidate median {candidate.median_ms:.4g} ms is below the roofline floor {result.bound_ms:.4g} ms"
        )
    return None


# -- pooled judgements ----------------------------------------------------------------------------------


def judge_configuration(results: Sequence[BenchmarkResult], target: GoalTarget) -> FailingBenchmark | None:
    """One configuration over the runs that timed it: None when it reaches ``target`` with its margin."""
    base = dict(scenario_id=results[0].scenario_id, baseline=target.baseline, target_ratio=target.ratio,
                runs=len(results))
    for result in reversed(results):
        hard = _hard_shortfall(result, target.baseline)
        if hard is not None:
            ratio = result.ratio(target.baseline)
            return FailingBenchmark(**base, ratio=ratio, ratio_error=math.nan, shortfall=hard[0], detail=hard[1])
    ratios = [r.ratio(target.baseline) for r in results]
    ratio = statistics.median(ratios)
    errors = [ratio_error(r, target.baseline) for r in results]
    error = statistics.median(errors) if all(math.isfinite(e) for e in errors) else math.nan
    if not ratio >= target.ratio:
        return FailingBenchmark(**base, ratio=ratio, ratio_error=error, shortfall=Shortfall.BELOW_TARGET)
    if not lower_bound(ratio, error) >= target.ratio:
        detail = "error unknown" if not math.isfinite(error) else ""
        return FailingBenchmark(
            **base, ratio=ratio, ratio_error=error, shortfall=Shortfall.WITHIN_MARGIN, detail=detail
        )
    return None


def _run_problems(evaluation: Evaluation) -> list[str]:
    if not evaluation.built:
        last = (evaluation.build.log_tail.strip().splitlines() or ["(no log)"])[-1]
        return [f"build failed: {last}"]
    problems = [f"audit: {f.rule}: {f.evidence}" for f in evaluation.audit]
    if not evaluation.ran:
        problems.append(f"{NOTHING_MEASURED}: {not_run_reason(evaluation)}")
    elif not evaluation.correctness:
        problems.append("no correctness scenario was run")
    return problems


NOTHING_MEASURED = "nothing could be measured"


def not_run_reason(evaluation: Evaluation) -> str:
    """Why an evaluation that built ran nothing (no device), as the evaluator said it."""
    detail = next((v.detail for v in evaluation.correctness if v.detail), "") or evaluation.note
    return detail.removesuffix(": nothing was run") or "no device"


def judge_correctness(
    runs: Sequence[Evaluation], expected: Sequence[str] | None
) -> tuple[list[str], list[FailingScenario]]:
    """Problems (build, audit, nothing run) and failing scenarios over every run; the latest failure of each
    scenario is the one shown."""
    problems: list[str] = []
    failing: dict[str, FailingScenario] = {}
    for run in runs:
        problems += [p for p in _run_problems(run) if p not in problems]
        # A run that executed nothing has no failing scenario: its problem says it measured nothing.
        for verdict in run.failing() if run.ran else ():
            failing[verdict.scenario_id] = FailingScenario(
                scenario_id=verdict.scenario_id, verdict=verdict.verdict, detail=verdict.detail
            )
    seen = {v.scenario_id for run in runs for v in run.correctness}
    for scenario_id in expected or ():
        if scenario_id not in seen and runs and runs[-1].ran:
            failing[scenario_id] = FailingScenario(
                scenario_id=scenario_id, verdict=Verdict.NOT_RUN, detail="missing from the evaluation"
            )
    return problems, list(failing.values())


def judge_benchmarks(
    spec: TaskSpec, runs: Sequence[Evaluation], expected: Sequence[str] | None
) -> tuple[list[str], list[FailingBenchmark], int]:
    """(problems, failing configurations, target checks made) over the runs that timed anything."""
    timed = [r for r in runs if r.built and r.ran and r.benchmarks]
    ids = (list(expected) if expected is not None
           else list(dict.fromkeys(b.scenario_id for r in timed for b in r.benchmarks)))
    problems: list[str] = []
    failing: list[FailingBenchmark] = []
    checked = 0
    for target in spec.goal.targets:
        matched = [i for i in ids if fnmatch.fnmatchcase(i, target.scenarios)]
        if not matched:
            problems.append(f"goal target '{target.scenarios}' vs {target.baseline} matches no timed configuration")
        for scenario_id in matched:
            checked += 1
            results = [b for r in timed for b in r.benchmarks if b.scenario_id == scenario_id]
            if not results:
                failing.append(FailingBenchmark(
                    scenario_id=scenario_id, baseline=target.baseline, target_ratio=target.ratio, ratio=math.nan,
                    ratio_error=math.nan, shortfall=Shortfall.NOT_BENCHMARKED,
                    detail="no full evaluation holds a timing of this configuration",
                ))
            elif (miss := judge_configuration(results, target)) is not None:
                failing.append(miss)
    return problems, failing, checked


def judge_runs(spec: TaskSpec, runs: Sequence[Evaluation], expected: Expected) -> Verdicts:
    """Correctness and benchmarks over ``runs`` pooled (the evaluator times only a correct candidate)."""
    problems, failing = judge_correctness(runs, expected.correctness)
    benchmarks: list[FailingBenchmark] = []
    checked = 0
    if any(r.built and r.ran and r.benchmarks for r in runs):
        more, benchmarks, checked = judge_benchmarks(spec, runs, expected.benchmarks)
        problems += more
    elif not failing and not problems:
        problems.append("no benchmark configuration was timed")
    elif failing and all(r.built and r.ran for r in runs):
        # The evaluator times only a correct candidate: one line says so, rather than one per configuration.
        problems.append("benchmarks not timed: every correctness scenario must pass first")
    return Verdicts(tuple(problems), tuple(failing), tuple(benchmarks), checked)
