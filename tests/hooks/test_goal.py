"""The goal predicate: per scenario, stale on another hash, unavailable baselines fail, near misses re-timed."""

from __future__ import annotations

import math

from quaere.goal import (
    GoalState,
    Shortfall,
    check_goal,
    check_goal_with_retime,
    near_misses,
    render_goal,
)
from quaere.records import TimingStatus, Verdict

from .factories import bench, evaluation, spec, timing


def test_no_evaluation():
    status = check_goal(spec(), [], "h1")
    assert status.state is GoalState.NO_EVALUATION
    assert "never evaluated" in render_goal(status)


def test_met_when_every_scenario_passes_and_every_config_reaches_target():
    ev = evaluation("h1", benchmarks=[bench("b1", 1.0, 2.0), bench("b2", 1.0, 1.5)])
    status = check_goal(spec(), [ev], "h1")
    assert status.state is GoalState.MET, render_goal(status)
    assert status.benchmarks_checked == 2


def test_stale_when_latest_evaluation_is_of_another_hash():
    good = evaluation("h1", benchmarks=[bench("b1", 1.0, 2.0)])
    status = check_goal(spec(), [good], "h2")
    assert status.state is GoalState.STALE
    assert status.evaluated_hash == "h1"
    assert "h1" in render_goal(status) and "quaere eval" in render_goal(status)


def test_per_scenario_never_an_average():
    # geomean of (4.0, 1.2) = 2.19 > 1.5, but b2 misses: unmet.
    ev = evaluation("h1", benchmarks=[bench("b1", 1.0, 4.0), bench("b2", 1.0, 1.2)])
    status = check_goal(spec(), [ev], "h1")
    assert status.state is GoalState.UNMET
    [miss] = status.failing_benchmarks
    assert (miss.scenario_id, miss.shortfall) == ("b2", Shortfall.BELOW_TARGET)
    assert math.isclose(miss.ratio, 1.2)
    text = render_goal(status)
    assert "b2: 1.200x" in text and "target 1.500x" in text


def test_failing_correctness_listed_with_verdict_and_detail():
    ev = evaluation(
        "h1",
        verdicts=[("c1", Verdict.PASSED), ("c2", Verdict.WRONG), ("c3", Verdict.NONFINITE)],
        benchmarks=[bench("b1", 1.0, 2.0)],
    )
    status = check_goal(spec(), [ev], "h1")
    assert status.state is GoalState.UNMET
    assert [(f.scenario_id, f.verdict) for f in status.failing_scenarios] == [
        ("c2", Verdict.WRONG),
        ("c3", Verdict.NONFINITE),
    ]
    assert "c2: wrong: c2 is off" in render_goal(status)


def test_unavailable_baseline_fails_with_its_reason():
    goal = {"targets": [{"baseline": "ref", "ratio": 1.0}]}
    unavailable = timing("ref", 0, status=TimingStatus.UNAVAILABLE, detail="ref not installed")
    ev = evaluation("h1", benchmarks=[bench("b1", 1.0, 2.0, 0.0, unavailable)])
    status = check_goal(spec(**goal), [ev], "h1")
    assert status.state is GoalState.UNMET
    [miss] = status.failing_benchmarks
    assert miss.shortfall is Shortfall.BASELINE_UNAVAILABLE
    assert "ref not installed" in render_goal(status)


def test_no_device_run_is_unmet_not_met():
    status = check_goal(spec(), [evaluation("h1", ran=False)], "h1")
    assert status.state is GoalState.UNMET
    assert any("no device" in p for p in status.problems)


def test_build_failure_is_a_problem():
    status = check_goal(spec(), [evaluation("h1", built=False, ran=False)], "h1")
    assert status.state is GoalState.UNMET
    assert "expected ';'" in render_goal(status)


def test_expected_benchmark_missing_from_evaluation_fails():
    ev = evaluation("h1", benchmarks=[bench("b1", 1.0, 2.0)])
    status = check_goal(spec(), [ev], "h1", expected_benchmarks=["b1", "b2"])
    assert [(m.scenario_id, m.shortfall) for m in status.failing_benchmarks] == [("b2", Shortfall.NOT_BENCHMARKED)]


def test_faster_than_roofline_does_not_count():
    ev = evaluation("h1", benchmarks=[bench("b1", 1.0, 2.0, suspect=True)])
    status = check_goal(spec(), [ev], "h1")
    assert status.failing_benchmarks[0].shortfall is Shortfall.FASTER_THAN_ROOFLINE


def test_near_miss_detected_only_within_spread():
    # ratio 1.45 vs target 1.5; spread of the ratio = 1.45 * (0.05/1 + 0.05/1.45) ~ 0.12 > 0.05: near miss.
    near = bench("near", 1.0, 1.45, 0.05)
    far = bench("far", 1.0, 1.0, 0.01)
    status = check_goal(spec(), [evaluation("h1", benchmarks=[near, far])], "h1")
    assert near_misses(status) == ["near"]
    assert "near miss" in render_goal(status)


class FakeRetimer:
    def __init__(self, result):
        self.result, self.calls = result, []

    def retime(self, ids):
        self.calls.append(list(ids))
        return self.result


def test_retime_decides_on_fresh_timing():
    first = evaluation("h1", benchmarks=[bench("b1", 1.0, 2.0), bench("near", 1.0, 1.45, 0.05)], created_at=1)
    fresh = evaluation("h1", verdicts=(), benchmarks=[bench("near", 1.0, 1.6, 0.01)], created_at=2)
    retimer = FakeRetimer(fresh)
    status = check_goal_with_retime(spec(), [first], "h1", retimer)
    assert retimer.calls == [["near"]]
    assert status.state is GoalState.MET and status.retimed == ("near",)


def test_retime_confirms_a_miss():
    first = evaluation("h1", benchmarks=[bench("near", 1.0, 1.45, 0.05)], created_at=1)
    fresh = evaluation("h1", verdicts=(), benchmarks=[bench("near", 1.0, 1.40, 0.01)], created_at=2)
    status = check_goal_with_retime(spec(), [first], "h1", FakeRetimer(fresh))
    assert status.state is GoalState.UNMET and status.failing_benchmarks[0].scenario_id == "near"


def test_no_retime_when_a_hard_failure_exists():
    first = evaluation("h1", verdicts=[("c1", Verdict.WRONG)], benchmarks=[bench("near", 1.0, 1.45, 0.05)])
    retimer = FakeRetimer(None)
    status = check_goal_with_retime(spec(), [first], "h1", retimer)
    assert retimer.calls == [] and status.state is GoalState.UNMET


def test_timing_only_run_keeps_correctness_of_full_run():
    full = evaluation("h1", verdicts=[("c1", Verdict.WRONG)], benchmarks=[bench("b1", 1.0, 2.0)], created_at=1)
    retime = evaluation("h1", verdicts=(), benchmarks=[bench("b1", 1.0, 2.0)], created_at=2)
    status = check_goal(spec(), [full, retime], "h1")
    assert status.state is GoalState.UNMET and status.failing_scenarios[0].scenario_id == "c1"


def test_a_retime_that_timed_nothing_is_a_problem_not_a_verdict():
    first = evaluation("h1", benchmarks=[bench("near", 1.0, 1.45, 0.05)], created_at=1)
    nothing = evaluation("h1", ran=False, created_at=2).model_copy(update={"note": "GPU busy"})
    status = check_goal_with_retime(spec(), [first], "h1", FakeRetimer(nothing))
    assert status.state is GoalState.UNMET and status.retimed == ()
    assert status.problems == ("re-timing did not run: GPU busy",)


def test_the_current_files_own_evaluation_counts_not_a_later_one_of_another_file():
    mine = evaluation("h1", verdicts=[("c1", Verdict.WRONG)], created_at=1)
    side = evaluation("h2", benchmarks=[bench("b1", 1.0, 2.0)], created_at=2)  # e.g. `quaere eval other.c`
    status = check_goal(spec(), [mine, side], "h1")
    assert status.state is GoalState.UNMET and status.failing_scenarios[0].scenario_id == "c1"


def test_untimed_because_incorrect_is_one_line_not_one_per_configuration():
    ev = evaluation("h1", verdicts=[("c1", Verdict.WRONG)])
    status = check_goal(spec(), [ev], "h1", expected_benchmarks=["b1", "b2", "b3"])
    assert status.state is GoalState.UNMET and status.failing_benchmarks == ()
    assert status.problems == ("benchmarks not timed: every correctness scenario must pass first",)
