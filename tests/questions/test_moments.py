"""Each of the five detectors on positive cases, negative cases and near misses."""

from __future__ import annotations

from quaere.questions.moments import (
    CampaignStartConfig,
    PlateauConfig,
    SuspiciousGainConfig,
    check_campaign_start,
    check_claimed_limit,
    check_explained_failure,
    check_plateau,
    check_suspicious_gain,
    detect_moments,
)
from quaere.records import Moment
from quaere.trace import EvaluationDone

from .helpers import asked, decision, evaluation, failure, said, stop

MIN = 60.0

CLAIM_MESSAGE = """I profiled the latest version on the three largest configurations.

DRAM throughput is at 2.9 TB/s out of the 4.8 TB/s the H200 advertises, and the tensor pipes are idle for a
good part of the loop. At this point the kernel is fundamentally memory-bound, so I don't think it can go much
further: the remaining time is spent streaming the inputs.

Given that, the kernel cannot be improved further without changing the problem. I'll stop here."""

NEAR_MISS_MESSAGE = """The latest run improved the large configurations by 4%.

This is not a hardware limit: we sustain only 41% of the measured bandwidth, and the kernel is not memory-bound
on any configuration I looked at. We're not done yet. Let me check whether the remaining gap on the small
configurations is latency-bound, and if it is optimal to use 2 stages there.

Is the kernel compute-bound on d=256? I'll measure it next. The `make` output said "done" and nothing else."""

BLAME_MESSAGE = """The evaluation failed on d128-b2-s1000 with max_abs_err 0.031 against a bound of 0.024.

Looking at the values, the error is spread over the whole last tile and is tiny in absolute terms. This is most
likely just bf16 rounding from the different accumulation order; the reference uses a different summation
order so some drift is expected.

I'll move on to the next optimization and re-run later."""

HONEST_FAILURE_MESSAGE = """The evaluation failed on d128-b2-s1000: max_abs_err 0.031, bound 0.024.

This is not a rounding issue. The worst elements all sit in rows 992..999, the last partial tile, which points
to a missing bounds check in the store. I'll check whether the mask uses the padded length.

The timing difference on the other scenarios is within noise, so the change itself did not cost time."""


# --- campaign start ---------------------------------------------------------------------------------------


def test_campaign_start_holds_before_any_question():
    check = check_campaign_start([evaluation(0)])
    assert check.holds and check.moment is Moment.CAMPAIGN_START
    assert "no question asked" in check.evidence


def test_campaign_start_ends_with_the_first_question():
    assert not check_campaign_start([evaluation(0), asked(1, Moment.CAMPAIGN_START)]).holds


def test_campaign_start_ends_after_enough_evaluations_without_a_question():
    events = [evaluation(t) for t in range(4)]
    assert not check_campaign_start(events, CampaignStartConfig(max_evaluations=3)).holds
    assert check_campaign_start(events[:3], CampaignStartConfig(max_evaluations=3)).holds


def test_empty_trace_is_the_campaign_start_only():
    assert [h.moment for h in detect_moments([])] == [Moment.CAMPAIGN_START]


# --- plateau ----------------------------------------------------------------------------------------------


def test_plateau_after_n_evaluations_without_a_new_best():
    events = [evaluation(0, 1.0), evaluation(1, 1.3)] + [evaluation(2 + t, 1.25) for t in range(6)]
    check = check_plateau(events, PlateauConfig(evaluations=6, minutes=1e6))
    assert check.holds
    assert "6 evaluation(s)" in check.evidence and "1.300x" in check.evidence


def test_no_plateau_one_evaluation_short():
    events = [evaluation(0, 1.3)] + [evaluation(1 + t, 1.25) for t in range(5)]
    assert not check_plateau(events, PlateauConfig(evaluations=6, minutes=1e6)).holds


def test_a_new_best_restarts_the_count():
    events = [evaluation(0, 1.3)] + [evaluation(1 + t, 1.2) for t in range(5)] + [evaluation(6, 1.4)]
    events += [evaluation(7 + t, 1.2) for t in range(3)]
    assert not check_plateau(events, PlateauConfig(evaluations=6, minutes=1e6)).holds


def test_gains_below_the_minimum_are_not_a_new_best():
    events = [evaluation(0, 1.0)] + [evaluation(1 + t, 1.0 + 0.0001 * (t + 1)) for t in range(6)]
    assert check_plateau(events, PlateauConfig(evaluations=6, minutes=1e6, min_gain_pct=0.5)).holds


def test_plateau_after_t_minutes_since_the_best():
    events = [evaluation(0, 1.3), evaluation(50 * MIN, 1.1)]
    assert check_plateau(events, PlateauConfig(evaluations=100, minutes=45)).holds
    assert not check_plateau(events, PlateauConfig(evaluations=100, minutes=60)).holds


def test_plateau_uses_now_when_given():
    events = [evaluation(0, 1.3)]
    assert not check_plateau(events, PlateauConfig(minutes=45)).holds
    assert check_plateau(events, PlateauConfig(minutes=45), now=46 * MIN).holds


def test_failing_evaluations_count_as_attempts_but_never_as_best():
    events = [evaluation(0, 1.3)] + [failure(1 + t) for t in range(6)]
    assert check_plateau(events, PlateauConfig(evaluations=6, minutes=1e6)).holds


def test_a_plateau_question_resets_the_plateau():
    events = [evaluation(0, 1.3)] + [evaluation(1 + t, 1.2) for t in range(6)] + [asked(7, Moment.PLATEAU)]
    config = PlateauConfig(evaluations=6, minutes=1e6)
    assert not check_plateau(events, config).holds
    events += [evaluation(8 + t, 1.2) for t in range(6)]
    assert check_plateau(events, config).holds


def test_no_plateau_without_evaluations():
    assert not check_plateau([said(0, "hello")]).holds


# --- claimed limit or completion ----------------------------------------------------------------------


def test_stop_attempt_with_the_goal_unmet_is_a_claim():
    events = [evaluation(0, 0.8), stop(1, "I think we're done.")]
    check = check_claimed_limit(events)
    assert check.holds and "tried to stop" in check.evidence and "done" in check.evidence


def test_stop_attempt_after_a_failing_evaluation_is_a_claim():
    assert check_claimed_limit([failure(0), stop(1)]).holds


def test_stop_attempt_with_the_goal_met_is_not_a_claim():
    assert not check_claimed_limit([evaluation(0, 1.2), stop(1)]).holds


def test_stop_decision_overrides_the_local_goal_estimate():
    assert not check_claimed_limit([evaluation(0, 0.8), stop(1), decision(2, "met")]).holds
    assert check_claimed_limit([evaluation(0, 1.2), stop(1), decision(2, "unmet")]).holds


def test_realistic_claim_in_a_message():
    check = check_claimed_limit([evaluation(0, 0.9), said(1, CLAIM_MESSAGE)])
    assert check.holds
    assert "memory-bound" in check.evidence


def test_near_misses_in_a_message_are_not_claims():
    check = check_claimed_limit([evaluation(0, 0.9), said(1, NEAR_MISS_MESSAGE)])
    assert not check.holds, check.evidence


def test_a_claim_followed_by_new_work_has_passed():
    events = [evaluation(0, 0.9), said(1, CLAIM_MESSAGE), evaluation(2, 0.95)]
    assert not check_claimed_limit(events).holds


def test_a_claim_answered_by_a_question_does_not_hold_again():
    events = [evaluation(0, 0.9), said(1, CLAIM_MESSAGE), asked(2, Moment.CLAIMED_LIMIT)]
    assert not check_claimed_limit(events).holds


def test_only_the_agent_claims():
    assert not check_claimed_limit([evaluation(0, 0.9), said(1, "You are at the hardware limit.", role="user")]).holds


# --- suspicious gain ----------------------------------------------------------------------------------


def test_a_jump_beyond_the_threshold_is_suspicious():
    check = check_suspicious_gain([evaluation(0, 1.0), evaluation(1, 1.4)], SuspiciousGainConfig(gain_pct=25))
    assert check.holds and "+40%" in check.evidence


def test_a_steady_gain_is_not_suspicious():
    events = [evaluation(0, 1.0), evaluation(1, 1.2), evaluation(2, 1.44)]
    assert not check_suspicious_gain(events, SuspiciousGainConfig(gain_pct=25)).holds


def test_a_scenario_above_its_roofline_is_suspicious():
    check = check_suspicious_gain([evaluation(0, 1.05, above_roofline=("s-small",))])
    assert check.holds and "s-small" in check.evidence


def test_far_ahead_of_the_comparison_is_suspicious():
    far = evaluation(0, 1.1, comparison_ratios={"s-small": 1.8, "s-large": 1.1})
    near = evaluation(0, 1.1, comparison_ratios={"s-small": 1.3})
    assert check_suspicious_gain([far], SuspiciousGainConfig(comparison_ratio=1.5)).holds
    assert not check_suspicious_gain([near], SuspiciousGainConfig(comparison_ratio=1.5)).holds


def test_a_jump_on_one_configuration_of_many_is_suspicious():
    ratios = {f"cfg{i:02d}": 1.0 for i in range(26)}
    before = EvaluationDone(ts=0, candidate_hash="a" * 64, correct=True, ratios=ratios, geomean_ratio=1.0)
    jumped = dict(ratios, cfg07=3.0)
    after = EvaluationDone(ts=1, candidate_hash="b" * 64, correct=True, ratios=jumped, geomean_ratio=3.0 ** (1 / 26))
    check = check_suspicious_gain([before, after])
    assert check.holds and "configuration cfg07 1.00x -> 3.00x" in check.evidence and "1 of 26" in check.evidence
    steady = dict(ratios, cfg07=1.8)
    calm = EvaluationDone(ts=1, candidate_hash="c" * 64, correct=True, ratios=steady, geomean_ratio=1.02)
    assert not check_suspicious_gain([before, calm]).holds


def test_a_gain_built_in_small_steps_is_suspicious_once_it_adds_up():
    steps = [evaluation(t, 1.2**t) for t in range(5)]  # +20% each, 2.07x after four steps
    assert not check_suspicious_gain(steps[:4]).holds  # 1.73x: below the cumulative threshold
    check = check_suspicious_gain(steps)
    assert check.holds and "since the last check" in check.evidence and "+107% cumulative" in check.evidence
    # questioned: the count starts again from the best at that point
    assert not check_suspicious_gain([*steps, asked(5, Moment.SUSPICIOUS_GAIN), evaluation(6, 2.2)]).holds


def test_an_incorrect_candidate_is_not_a_gain():
    assert not check_suspicious_gain([evaluation(0, 1.0), evaluation(1, 3.0, correct=False, failing=("x",))]).holds


def test_a_gain_already_questioned_does_not_hold_again():
    events = [evaluation(0, 1.0), evaluation(1, 1.6), asked(2, Moment.SUSPICIOUS_GAIN), evaluation(3, 1.6)]
    assert not check_suspicious_gain(events).holds


# --- explained-away correctness failure --------------------------------------------------------------


def test_a_stop_while_correctness_fails_explains_it_away_whatever_the_words():
    check = check_explained_failure([failure(0), stop(1, "Here is where things stand.")])
    assert check.holds and "tried to stop after d128-b2-s1000 failed" in check.evidence
    dismissed = check_explained_failure([failure(0), stop(1, "The one failure is just bf16 rounding.")])
    assert "its final message dismissed it" in dismissed.evidence and "rounding" in dismissed.evidence
    assert not check_explained_failure([evaluation(0, 1.0), stop(1, "Here is where things stand.")]).holds


def test_a_dismissal_stands_while_correctness_still_fails():
    assert check_explained_failure([failure(0), said(1, BLAME_MESSAGE), failure(2)]).holds


def test_a_stop_answered_by_a_question_is_not_asked_again():
    events = [failure(0), stop(1), asked(2, Moment.EXPLAINED_FAILURE)]
    assert not check_claimed_limit(events).holds


def test_blaming_rounding_after_a_failure():
    check = check_explained_failure([failure(0), said(1, BLAME_MESSAGE)])
    assert check.holds
    assert "d128-b2-s1000" in check.evidence and "rounding" in check.evidence


def test_an_honest_diagnosis_is_not_explaining_away():
    check = check_explained_failure([failure(0), said(1, HONEST_FAILURE_MESSAGE)])
    assert not check.holds, check.evidence


def test_blame_words_after_a_passing_evaluation_do_not_count():
    assert not check_explained_failure([evaluation(0, 1.1), said(1, BLAME_MESSAGE)]).holds


def test_blame_after_the_failure_was_fixed_does_not_count():
    assert not check_explained_failure([failure(0), evaluation(1, 1.1), said(2, BLAME_MESSAGE)]).holds


def test_a_build_failure_is_not_a_correctness_failure():
    assert not check_explained_failure([evaluation(0, correct=False, failing=()), said(1, BLAME_MESSAGE)]).holds


def test_each_excuse_is_recognized():
    for excuse in (
        "The test is flaky on this scenario.",
        "The mismatch is within tolerance for bf16.",
        "The tolerance is too tight for this size.",
        "I believe the reference is wrong on this scenario.",
        "These errors are just numerical noise.",
        "The failure comes from a precision issue in the reference path.",
    ):
        assert check_explained_failure([failure(0), said(1, excuse)]).holds, excuse


# --- all together -------------------------------------------------------------------------------------


def test_detect_moments_orders_hits_by_urgency():
    events = [evaluation(t, 1.0) for t in range(7)] + [failure(8), said(9, BLAME_MESSAGE), stop(10)]
    hits = detect_moments(events)
    assert [h.moment for h in hits] == [Moment.EXPLAINED_FAILURE, Moment.CLAIMED_LIMIT, Moment.PLATEAU]
    assert all(h.evidence for h in hits)


def test_detect_moments_runs_every_detector():
    cases = {
        Moment.CAMPAIGN_START: [],
        Moment.PLATEAU: [asked(0, Moment.CAMPAIGN_START)] + [evaluation(1 + t, 1.0) for t in range(7)],
        Moment.CLAIMED_LIMIT: [asked(0, Moment.CAMPAIGN_START), evaluation(1, 0.8), stop(2)],
        Moment.SUSPICIOUS_GAIN: [asked(0, Moment.CAMPAIGN_START), evaluation(1, 1.0), evaluation(2, 2.0)],
        Moment.EXPLAINED_FAILURE: [asked(0, Moment.CAMPAIGN_START), failure(1), said(2, BLAME_MESSAGE)],
    }
    for moment, events in cases.items():
        assert [h.moment for h in detect_moments(events)] == [moment], moment


def test_claiming_completion_once_the_goal_is_met_is_not_a_claimed_limit():
    assert not check_claimed_limit([evaluation(0, 1.2), said(1, "All scenarios meet the goal; I'm done.")]).holds
    assert check_claimed_limit([evaluation(0, 0.7), said(1, "All scenarios look fine; I'm done.")]).holds
