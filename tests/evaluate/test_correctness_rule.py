"""The correctness rule as pure functions, and the null candidates on the CPU task's real scenarios."""

from __future__ import annotations

import math

import pytest

from quaere.evaluate.arrays import NumpyOps, guard_elems
from quaere.evaluate.correctness import CallFacts, ErrorStats, OutputCheck, Rule, judge_error, judge_scenario, passes
from quaere.records import Verdict
from quaere.task.contract import OutputSpec

RULE = Rule(factor=2.0, floor=1e-6)
LOW = ErrorStats(max_abs_err=1e-7, nonfinite_mismatch=0, nan_count=0)


def err(value: float, mismatch: int = 0, nans: int = 0) -> ErrorStats:
    return ErrorStats(max_abs_err=value, nonfinite_mismatch=mismatch, nan_count=nans)


def check(error: ErrorStats, poison: int = 0, guards: bool = True) -> OutputCheck:
    return OutputCheck(name="y", numel=10, poison_left=poison, guards_intact=guards, error=error, low=LOW)


def test_bound_is_factor_times_low_error_plus_floor() -> None:
    assert judge_error("y", err(1.2e-6), LOW, RULE)[0] is Verdict.PASSED
    verdict, record, detail = judge_error("y", err(1.3e-6), LOW, RULE)
    assert verdict is Verdict.WRONG and record.bound == pytest.approx(1.2e-6) and "bound" in detail


def test_nan_never_passes_and_inf_must_match_the_reference() -> None:
    assert judge_error("y", err(0.0, nans=1), LOW, RULE)[0] is Verdict.NONFINITE
    assert judge_error("y", err(0.0, mismatch=1), LOW, RULE)[0] is Verdict.NONFINITE
    assert judge_error("y", err(math.nan), LOW, RULE)[0] is Verdict.WRONG


@pytest.mark.parametrize(
    ("facts", "output", "expected"),
    [
        (CallFacts(0, banned_loaded=("libcublas.so",)), check(err(0.0)), Verdict.BANNED_AT_RUNTIME),
        (CallFacts(3), check(err(0.0)), Verdict.UNSUPPORTED),
        (CallFacts(0), check(err(0.0), guards=False), Verdict.GUARD_CORRUPTED),
        (CallFacts(0, modified_inputs=("x",)), check(err(0.0)), Verdict.INPUT_MODIFIED),
        (CallFacts(0), check(err(0.0), poison=1), Verdict.UNWRITTEN),
        (CallFacts(0), check(err(1.0)), Verdict.WRONG),
        (CallFacts(0), check(err(0.0)), Verdict.PASSED),
    ],
)
def test_scenario_verdict_order(facts: CallFacts, output: OutputCheck, expected: Verdict) -> None:
    assert judge_scenario("s", 1, facts, (output,), (), RULE).verdict is expected


def test_a_passing_null_candidate_makes_the_scenario_harness_weak() -> None:
    verdict = judge_scenario("s", 1, CallFacts(0), (check(err(0.0)),), ("zeros",), RULE)
    assert verdict.verdict is Verdict.HARNESS_WEAK and "zeros" in verdict.detail
    failing = judge_scenario("s", 1, CallFacts(0), (check(err(1.0)),), ("zeros",), RULE)
    assert failing.verdict is Verdict.WRONG  # a failure stays a failure


def test_null_candidates_fail_every_cpu_task_scenario(cpu_task) -> None:
    """The harness's own check on the shipped task: zeros and a copy of the input never pass."""
    ops, module = NumpyOps(), cpu_task.module
    rule = Rule(cpu_task.spec.correctness.factor, cpu_task.spec.correctness.floor)
    for scenario in module.correctness_scenarios():
        inputs = module.make_inputs(scenario, 5)
        ref32, low = module.reference(scenario, inputs, "fp32"), module.reference(scenario, inputs, "low")
        (name, spec), = module.output_specs(scenario).items()
        nulls = ops.null_candidates(spec, inputs)
        assert set(nulls) == {"zeros", "input copy"}
        for null, values in nulls.items():
            stats = {name: (ops.compare(values, ref32[name]), ops.compare(low[name], ref32[name]))}
            assert not passes(stats, rule), (scenario.id, null)


def test_numpy_ops_poison_guards_and_checksums() -> None:
    import numpy as np

    ops = NumpyOps()
    spec = OutputSpec(shape=(3, 5), dtype="float32")
    view, whole = ops.alloc_guarded(spec, guard_elems(spec))
    ops.poison(view)
    assert ops.count_poison(view) == 15 and ops.guards_intact(whole, guard_elems(spec))
    view[1, 2] = np.float32("nan")  # a kernel's own NaN is not poison
    assert ops.count_poison(view) == 14
    whole[guard_elems(spec) + 15] = 0.0  # one element past the end
    assert not ops.guards_intact(whole, guard_elems(spec))
    data = np.arange(1000, dtype=np.float32)
    before = ops.checksum(data)
    data[999] = np.nextafter(data[999], np.float32(2000))
    assert ops.checksum(data) != before


def test_numpy_compare_matches_infinities_exactly() -> None:
    import numpy as np

    ops = NumpyOps()
    ref = np.array([-np.inf, 1.0, 2.0])
    assert ops.compare(np.array([-np.inf, 1.0, 2.5]), ref) == ErrorStats(0.5, 0, 0)
    assert ops.compare(np.array([0.0, 1.0, 2.0]), ref).nonfinite_mismatch == 1
    assert ops.compare(np.array([np.inf, 1.0, 2.0]), ref).nonfinite_mismatch == 1
    assert ops.compare(np.array([-np.inf, np.nan, 2.0]), ref) == ErrorStats(0.0, 1, 1)
