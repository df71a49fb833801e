"""Achieved against the roofline, per benchmark configuration, from what the evaluator already measured.

For each configuration of an evaluation: the compute floor (flops / the task's matrix rate), the memory
floor (the task's fewest bytes / its bandwidth, when the task module can say), the roofline floor the
evaluator recorded (the larger), which one limits, and the share of that floor the candidate reaches
(floor / median time: 100% is at the roofline). Works for any task, the CPU one included.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

from quaere.records import Evaluation, TimingStatus
from quaere.task.spec import Roofline


class RooflineRow(BaseModel):
    model_config = ConfigDict(frozen=True)
    scenario_id: str
    status: TimingStatus  # the candidate's timing status; the figures below are NaN unless measured
    median_ms: float
    floor_ms: float  # the evaluator's roofline floor: max(compute, memory)
    compute_floor_ms: float
    memory_floor_ms: float  # NaN when the task module cannot give its fewest bytes here
    limiter: Literal["compute", "memory"]
    achieved: float  # floor_ms / median_ms: the share of the roofline reached
    tflops: float
    gbps: float  # fewest bytes / median time; NaN without the bytes
    ratios: dict[str, float]  # baseline -> speedup of the candidate over it


def roofline_rows(
    evaluation: Evaluation, roofline: Roofline, min_bytes: Mapping[str, float]
) -> tuple[RooflineRow, ...]:
    """One row per benchmark configuration of ``evaluation``; ``min_bytes`` by scenario id (may be empty)."""
    rows = []
    for bench in evaluation.benchmarks:
        mine = bench.timing("candidate")
        measured = mine is not None and mine.status is TimingStatus.MEASURED and mine.median_ms > 0
        median = mine.median_ms if measured and mine is not None else math.nan
        compute = bench.flops / (roofline.matrix_tflops * 1e12) * 1e3
        nbytes = min_bytes.get(bench.scenario_id, math.nan)
        memory = nbytes / (roofline.bandwidth_gbps * 1e9) * 1e3
        floor = bench.bound_ms
        limiter: Literal["compute", "memory"] = "memory" if floor > compute * (1 + 1e-9) else "compute"
        baselines = [t.impl for t in bench.timings if t.impl != "candidate"]
        rows.append(RooflineRow(
            scenario_id=bench.scenario_id,
            status=mine.status if mine is not None else TimingStatus.UNAVAILABLE,
            median_ms=median,
            floor_ms=floor,
            compute_floor_ms=compute,
            memory_floor_ms=memory,
            limiter=limiter,
            achieved=floor / median,
            tflops=bench.flops / (median * 1e-3) / 1e12,
            gbps=nbytes / (median * 1e-3) / 1e9,
            ratios={b: bench.ratio(b) for b in baselines},
        ))
    return tuple(rows)


def task_min_bytes(module: object, scenarios: list[object]) -> dict[str, float]:
    """The task module's ``min_bytes`` per benchmark scenario; empty where it cannot answer here."""
    try:
        return {s.id: float(module.min_bytes(s)) for s in scenarios}  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a module that needs a GPU for this: the memory floor stays unknown
        return {}
