"""The final per-scenario table: the final candidate against the initial kernel and each comparison.

Taken from the LATEST ledger record of the final candidate (records in ledger order; the last one whose
``candidate_hash`` matches). For each benchmark scenario and each baseline implementation timed there,
the ratio is baseline median / candidate median (above 1: the candidate is faster); the geomean per
baseline is over the scenarios where both were measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from quaere.records import Evaluation, TimingStatus

CANDIDATE = "candidate"


class BaselineCell(BaseModel):
    model_config = ConfigDict(frozen=True)
    status: TimingStatus
    median_ms: float
    ratio: float
    """Baseline median / candidate median; NaN when either was not measured."""


class FinalRow(BaseModel):
    model_config = ConfigDict(frozen=True)
    scenario_id: str
    candidate_status: TimingStatus
    candidate_ms: float
    candidate_tflops: float
    baselines: dict[str, BaselineCell]


class FinalTable(BaseModel):
    model_config = ConfigDict(frozen=True)
    candidate_hash: str
    evaluated_at: float
    ran: bool
    correct: bool
    passed: int
    total: int
    failing: tuple[str, ...]
    baselines: tuple[str, ...]
    """'initial' first, then comparisons in the order the evaluator timed them."""
    rows: tuple[FinalRow, ...]
    geomean_by_baseline: dict[str, float]


class NoFinalEvaluation(LookupError):
    """The ledger holds no evaluation of the final candidate."""


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of the finite positive values; NaN when there are none."""
    usable = [v for v in values if math.isfinite(v) and v > 0]
    return math.exp(sum(math.log(v) for v in usable) / len(usable)) if usable else math.nan


def latest_evaluation(evaluations: Sequence[Evaluation], candidate_hash: str) -> Evaluation:
    for evaluation in reversed(evaluations):
        if evaluation.candidate_hash == candidate_hash:
            return evaluation
    raise NoFinalEvaluation(f"no evaluation of candidate {candidate_hash[:12]} in the ledger")


def _baseline_names(evaluation: Evaluation) -> tuple[str, ...]:
    names: list[str] = []
    for bench in evaluation.benchmarks:
        for timing in bench.timings:
            if timing.impl != CANDIDATE and timing.impl not in names:
                names.append(timing.impl)
    return tuple(sorted(names, key=lambda n: (n != "initial", names.index(n))))


def final_table(evaluations: Sequence[Evaluation], candidate_hash: str) -> FinalTable:
    """Table of the latest evaluation of ``candidate_hash``; raise :class:`NoFinalEvaluation` if none."""
    evaluation = latest_evaluation(evaluations, candidate_hash)
    baselines = _baseline_names(evaluation)
    rows = []
    for bench in evaluation.benchmarks:
        mine = bench.timing(CANDIDATE)
        cells = {
            name: BaselineCell(status=t.status, median_ms=t.median_ms, ratio=bench.ratio(name))
            for name in baselines
            if (t := bench.timing(name)) is not None
        }
        rows.append(
            FinalRow(
                scenario_id=bench.scenario_id,
                candidate_status=mine.status if mine else TimingStatus.UNAVAILABLE,
                candidate_ms=mine.median_ms if mine else math.nan,
                candidate_tflops=mine.tflops if mine else math.nan,
                baselines=cells,
            )
        )
    return FinalTable(
        candidate_hash=candidate_hash,
        evaluated_at=evaluation.created_at,
        ran=evaluation.ran,
        correct=evaluation.correct,
        passed=sum(1 for v in evaluation.correctness if v.verdict.passed),
        total=len(evaluation.correctness),
        failing=tuple(v.scenario_id for v in evaluation.failing()),
        baselines=baselines,
        rows=tuple(rows),
        geomean_by_baseline={
            name: geomean([row.baselines[name].ratio for row in rows if name in row.baselines]) for name in baselines
        },
    )
