"""The trace's summary of one evaluation (the full record stays in the ledger)."""

from __future__ import annotations

import fnmatch
import math

from quaere.evaluate.stats import geomean
from quaere.records import BenchmarkResult, Evaluation, TimingStatus
from quaere.task.spec import TaskSpec
from quaere.trace import EvaluationDone


def goal_ratios(evaluation: Evaluation, spec: TaskSpec) -> dict[str, float]:
    """Candidate speedup over the first goal target's baseline, on the scenarios its glob matches."""
    target = spec.goal.targets[0]
    ratios: dict[str, float] = {}
    for bench in evaluation.benchmarks:
        if fnmatch.fnmatchcase(bench.scenario_id, target.scenarios):
            ratio = bench.ratio(target.baseline)
            if math.isfinite(ratio):
                ratios[bench.scenario_id] = ratio
    return ratios


def best_comparison_ratio(bench: BenchmarkResult) -> float:
    """Candidate speedup over the fastest measured comparison; NaN when none was measured."""
    comparisons = [
        t for t in bench.timings
        if t.impl not in ("candidate", "initial") and t.status is TimingStatus.MEASURED and t.median_ms > 0
    ]
    if not comparisons:
        return math.nan
    return bench.ratio(min(comparisons, key=lambda t: t.median_ms).impl)


def geomean_error(evaluation: Evaluation, spec: TaskSpec, ids: list[str]) -> float | None:
    """Relative standard error of the geomean of the ``ids`` configurations' ratios: in log space the
    mean of n terms, each with its ratio's relative error, so sqrt(sum of squares) / n; None if unknown."""
    from quaere.goal import ratio_error

    baseline = spec.goal.targets[0].baseline
    errors = [ratio_error(b, baseline) for b in evaluation.benchmarks if b.scenario_id in ids]
    if not errors or not all(math.isfinite(e) for e in errors):
        return None
    return math.sqrt(sum(e * e for e in errors)) / len(errors)


def to_trace_event(evaluation: Evaluation, spec: TaskSpec) -> EvaluationDone:
    ratios = goal_ratios(evaluation, spec)
    comparison_ratios = {
        b.scenario_id: r for b in evaluation.benchmarks if math.isfinite(r := best_comparison_ratio(b))
    }
    mean = geomean(list(ratios.values()))
    return EvaluationDone(
        candidate_hash=evaluation.candidate_hash,
        correct=evaluation.correct,
        failing=tuple(v.scenario_id for v in evaluation.failing()),
        ratios=ratios,
        geomean_ratio=mean if math.isfinite(mean) else None,
        geomean_error=geomean_error(evaluation, spec, list(ratios)) if math.isfinite(mean) else None,
        above_roofline=tuple(b.scenario_id for b in evaluation.benchmarks if b.suspect),
        comparison_ratios=comparison_ratios,
    )
