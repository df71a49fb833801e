"""Builders of trace events for the question tests (one place, so tests read as scenarios)."""

from __future__ import annotations

from quaere.records import Moment
from quaere.trace import AgentMessage, EvaluationDone, QuestionAsked, StopAttempt, StopDecision


def evaluation(
    ts: float, geomean: float = 1.0, correct: bool = True, failing: tuple[str, ...] = (), **extra
) -> EvaluationDone:
    """A correct evaluation timed at ``geomean`` (every scenario at that ratio), or a failing one."""
    ratios = {"s-small": geomean, "s-large": geomean} if correct else {}
    return EvaluationDone(
        ts=ts,
        candidate_hash=f"{int(ts):064d}",
        correct=correct,
        failing=failing,
        ratios=ratios,
        geomean_ratio=geomean if correct else None,
        **extra,
    )


def failure(ts: float, failing: tuple[str, ...] = ("d128-b2-s1000",)) -> EvaluationDone:
    return evaluation(ts, correct=False, failing=failing)


def said(ts: float, text: str, role: str = "assistant") -> AgentMessage:
    return AgentMessage(ts=ts, role=role, text=text)


def asked(ts: float, moment: Moment, entry_id: str | None = "measure.spread") -> QuestionAsked:
    return QuestionAsked(ts=ts, moment=moment, source="bank", entry_id=entry_id, text="A question?")


def stop(ts: float, last_message: str = "") -> StopAttempt:
    return StopAttempt(ts=ts, last_message=last_message)


def decision(ts: float, goal_status: str) -> StopDecision:
    return StopDecision(
        ts=ts, decision="allow" if goal_status == "met" else "block", reason="", goal_status=goal_status
    )
