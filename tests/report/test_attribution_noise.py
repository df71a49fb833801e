"""Attribution credits a question only with a gain the kernel made: the same kernel timed again, or a
rise within the measured spread, is noise (a report once credited +0.016 to a question when the kernel
never changed)."""

from __future__ import annotations

from rich.console import Console

from quaere.records import Moment
from quaere.report.attribution import GainRejection, attribution
from quaere.report.questions import asked_questions
from quaere.trace import EvaluationDone, QuestionAsked


def done(candidate: str, geomean: float, error: float | None = 0.005) -> EvaluationDone:
    return EvaluationDone(candidate_hash=candidate * 64, correct=True, ratios={"b": geomean}, geomean_ratio=geomean,
                          geomean_error=error)


def asked(text: str) -> QuestionAsked:
    return QuestionAsked(moment=Moment.PLATEAU, source="human", text=text)


def gains(events: list[object]):
    return attribution(events, asked_questions(events, {}), k=1).gains


def test_the_same_kernel_timed_again_is_no_gain() -> None:
    (gain,) = gains([done("a", 1.000), asked("q"), done("a", 1.016)])
    assert gain.rejected is GainRejection.SAME_CANDIDATE and gain.gain == 0.0
    assert abs(gain.raw_gain - 0.016) < 1e-12


def test_a_new_kernel_within_the_spread_is_no_gain() -> None:
    # 0.016 against two standard errors of hypot(1.0 x 1 %, 1.016 x 1 %) = 0.0285: noise
    (gain,) = gains([done("a", 1.000, 0.01), asked("q"), done("b", 1.016, 0.01)])
    assert gain.rejected is GainRejection.WITHIN_SPREAD and gain.gain == 0.0


def test_a_new_kernel_beyond_the_spread_is_a_gain() -> None:
    first, second = gains([done("a", 1.000), asked("q1"), done("b", 1.100), asked("q2"), done("b", 1.150)])
    assert first.rejected is None and abs(first.gain - 0.1) < 1e-12
    assert second.rejected is GainRejection.SAME_CANDIDATE  # b again: its luckier timing is not q2's doing
    events = [done("a", 1.000), asked("q1"), done("b", 1.100), asked("q2"), done("b", 1.150)]
    result = attribution(events, asked_questions(events, {}), k=1)
    (group,) = result.by_group
    assert (group.questions, group.with_gain) == (2, 1) and abs(group.total_gain - 0.1) < 1e-12
    assert [g.question.number for g in result.largest] == [1]


def test_a_trace_without_spreads_counts_a_changed_kernel() -> None:
    (gain,) = gains([done("a", 1.000, None), asked("q"), done("b", 1.016, None)])
    assert gain.rejected is None and abs(gain.gain - 0.016) < 1e-12


def test_the_terminal_report_says_what_was_not_counted() -> None:
    from quaere.report.campaign_report import build_report
    from quaere.report.terminal import print_summary

    events = [done("a", 1.000), asked("q"), done("a", 1.016)]
    console = Console(record=True, width=80)
    print_summary(build_report(events, (), {}, {}, None, k=1), console)
    text = " ".join(console.export_text().split())  # wrapped at 80 columns
    assert "not counted as gains: 1 rise(s) of the best after a question (same kernel, timed again: 1)" in text
