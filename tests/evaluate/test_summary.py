"""The trace summary: ratios against the first goal target's baseline, comparisons, roofline flags."""

from __future__ import annotations

import math

from tests.evaluate.test_ledger import make_evaluation

from quaere.evaluate.summary import to_trace_event
from quaere.records import BenchmarkResult, Timing, TimingStatus, Verdict


def timing(impl: str, median_ms: float) -> Timing:
    return Timing(impl=impl, status=TimingStatus.MEASURED, samples_ms=(median_ms,), median_ms=median_ms)


def test_trace_event_from_an_evaluation(cpu_task) -> None:
    benches = (
        BenchmarkResult(scenario_id="bench-a", flops=1.0, bound_ms=0.1, suspect=True,
                        timings=(timing("candidate", 1.0), timing("initial", 2.0), timing("numpy", 4.0))),
        BenchmarkResult(scenario_id="bench-b", flops=1.0, bound_ms=0.1,
                        timings=(timing("candidate", 2.0), timing("initial", 1.0),
                                 Timing(impl="numpy", status=TimingStatus.UNAVAILABLE, detail="absent"))),
    )
    evaluation = make_evaluation(verdict=Verdict.WRONG).model_copy(update={"benchmarks": benches})
    event = to_trace_event(evaluation, cpu_task.spec)
    assert event.ratios == {"bench-a": 2.0, "bench-b": 0.5}
    assert event.geomean_ratio is not None and math.isclose(event.geomean_ratio, 1.0)
    assert event.comparison_ratios == {"bench-a": 4.0}
    assert event.above_roofline == ("bench-a",)
    assert not event.correct and event.failing == ("s1",)
