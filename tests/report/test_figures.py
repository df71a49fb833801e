"""Each figure of the scripted campaign (tests/report/campaign.py), checked exactly against a hand count."""

from __future__ import annotations

import pytest
from scripted_campaign import CATALOG, V0, V1, V2, V3, V4

from quaere.records import QuestionKind, TimingStatus
from quaere.report.attribution import attribution
from quaere.report.churn import churn, line_changes
from quaere.report.counts import question_counts, stop_counts
from quaere.report.pacing import tool_calls_per_question
from quaere.report.progress import best_ratio_over_time
from quaere.report.questions import asked_questions


def test_best_ratio_over_time_ignores_wrong_candidates(events):
    points = best_ratio_over_time(events)
    assert [p.tool_calls for p in points] == [3, 5, 9, 15, 15, 17]
    # E3 is wrong at 2.0: the best stays 1.125; E5 (1.4375) is below the best 1.5.
    assert [p.best_geomean for p in points] == [1.0, 1.125, 1.125, 1.5, 1.5, 1.625]
    assert [p.correct for p in points] == [True, True, False, True, True, True]
    assert points[2].best_by_scenario == {"s1": 1.25, "s2": 1.0}
    # Each configuration's best on its own: s1 from E4 (1.5), s2 from E6 (1.75).
    assert points[-1].best_by_scenario == {"s1": 1.5, "s2": 1.75}


def test_tool_calls_per_question(events):
    pacing = tool_calls_per_question(events)
    # Q1: 3+2, Q2: 4+1, Q3: 5, Q4: 2, Q5: 6 (to the end of the trace); none before Q1.
    assert pacing.calls_after_question == (5, 5, 5, 2, 6)
    assert pacing.calls_before_first == 0
    assert pacing.total_tool_calls == 23
    assert pacing.mean == 23 / 5
    assert pacing.median == 5.0


def test_churn_by_hand():
    # Lines compared as bytes, blank lines ignored, "re-added" = equal to a line deleted in an EARLIER step.
    # T1 V0->V1: B replaced by X.        deleted {B}; added [X];         re-added 0
    # T2 V1->V2: X -> B, + Y, + blank.   deleted {X}; added [B, Y];      re-added 1 (B, deleted in T1)
    # T3 V2->V3: C -> "  C", blank -> X. deleted {C}; added ["  C", X];  re-added 1 (X, deleted in T2;
    #                                     "  C" is not byte-identical to C)
    # T4 V3->V4: A moved to the end.     deleted {A}; added [A];         re-added 0 (A was deleted in T4
    #                                     itself, not earlier: a move is not a re-addition)
    # Total: 2 re-added of 6 added = 1/3.
    result = churn([("h0", V0), ("h1", V1), ("h2", V2), ("h3", V3), ("h4", V4)])
    assert [(t.added, t.deleted, t.readded) for t in result.transitions] == [(1, 1, 0), (2, 1, 1), (2, 1, 1), (1, 1, 0)]
    assert (result.added, result.readded) == (6, 2)
    assert result.fraction == 1 / 3


def test_churn_of_the_campaign_uses_evaluation_order(report):
    # V3 is evaluated twice in a row (E4, E5): one version, so the campaign has the same 4 transitions.
    assert len(report.churn.transitions) == 4
    assert report.churn.fraction == 1 / 3
    assert report.churn.missing_versions == ()


def test_a_revert_counts_as_readded_lines():
    # V1 -> V0 puts B back (deleted V0->V1) and deletes X: 1 added, 1 re-added.
    result = churn([("h0", V0), ("h1", V1), ("h0", V0)])
    assert (result.added, result.readded, result.fraction) == (2, 1, 0.5)


def test_line_changes_ignore_blank_lines():
    deleted, added = line_changes(b"a\n\n  \nb\n", b"a\nb\n\n\nc\n")
    assert (deleted, added) == ([], [b"c"])


def test_questions_are_classified_from_the_bank(events):
    questions = asked_questions(events, CATALOG)
    assert [(q.group, q.kind) for q in questions] == [
        ("levels", QuestionKind.LEVEL_SHIFT),
        ("human", QuestionKind.INFORMATION),
        ("limits", QuestionKind.LIMIT_CHALLENGE),
        ("profiling", QuestionKind.INFORMATION),
        ("not-in-bank", QuestionKind.INFORMATION),
    ]
    assert [q.tool_calls_before for q in questions] == [0, 5, 10, 15, 17]
    assert [q.in_bank for q in questions] == [True, True, True, True, False]


def test_attribution_over_the_next_two_evaluations(events):
    result = attribution(events, asked_questions(events, CATALOG), k=2)
    # Q1: no correct evaluation before it -> None. Q2: best 1.125 before; window E3 (wrong), E4 (1.5) -> +0.375.
    # Q3: 1.125 before; window E4, E5 -> 1.5 -> +0.375. Q4: 1.5 before; window E6 only -> 1.625 -> +0.125.
    # Q5: nothing evaluated after it -> None.
    assert [g.gain for g in result.gains] == [None, 0.375, 0.375, 0.125, None]
    assert [g.evaluations_in_window for g in result.gains] == [2, 2, 2, 1, 0]
    by_kind = {g.name: (g.questions, g.with_gain, g.total_gain, g.mean_gain) for g in result.by_kind}
    assert by_kind == {
        "information": (3, 2, 0.5, 0.25),
        "level-shift": (1, 0, 0, None),
        "limit-challenge": (1, 1, 0.375, 0.375),
    }
    by_group = {g.name: (g.questions, g.total_gain) for g in result.by_group}
    assert by_group == {"human": (1, 0.375), "levels": (1, 0), "limits": (1, 0.375), "not-in-bank": (1, 0),
                        "profiling": (1, 0.125)}
    # Largest first; ties by the earlier question.
    assert [g.question.number for g in result.largest] == [2, 3, 4]


def test_attribution_window_of_one_sees_the_wrong_candidate_as_no_gain(events):
    result = attribution(events, asked_questions(events, CATALOG), k=1)
    assert [g.gain for g in result.gains] == [None, 0.0, 0.375, 0.125, None]
    assert [g.question.number for g in result.largest] == [3, 4]


def test_attribution_rejects_a_window_of_zero(events):
    with pytest.raises(ValueError, match="k must be at least 1"):
        attribution(events, (), k=0)


def test_counts(events):
    counts = question_counts(asked_questions(events, CATALOG))
    assert counts.total == 5
    assert counts.by_group == {"human": 1, "levels": 1, "limits": 1, "not-in-bank": 1, "profiling": 1}
    assert counts.by_moment == {"campaign_start": 1, "claimed_limit": 1, "plateau": 2, "suspicious_gain": 1}
    assert counts.by_kind == {"information": 3, "level-shift": 1, "limit-challenge": 1}
    assert counts.by_group_and_moment["profiling"] == {"plateau": 1}
    stops = stop_counts(events)
    assert (stops.attempts, stops.blocked, stops.allowed) == (2, 1, 1)
    assert stops.by_goal_status == {"met": 1, "unmet": 1}


def test_final_table_is_the_latest_evaluation_of_the_final_candidate(report, campaign):
    final = report.final
    assert final is not None
    assert final.candidate_hash == campaign.hashes["V4"]
    assert final.evaluated_at == 1005.0
    assert (final.correct, final.passed, final.total) == (True, 2, 2)
    assert final.baselines == ("initial", "fa3", "cudnn")
    s1, s2 = final.rows
    assert (s1.candidate_ms, s1.baselines["initial"].ratio, s1.baselines["fa3"].ratio) == (0.5, 2.0, 0.5)
    assert (s2.baselines["initial"].ratio, s2.baselines["fa3"].ratio) == (8.0, 2.0)
    assert s1.baselines["cudnn"].status is TimingStatus.UNAVAILABLE
    assert final.geomean_by_baseline["initial"] == pytest.approx(4.0, rel=1e-12)
    assert final.geomean_by_baseline["fa3"] == pytest.approx(1.0, rel=1e-12)


def test_report_names_unknown_bank_entries(report):
    assert any("retired-entry" in p for p in report.problems)
