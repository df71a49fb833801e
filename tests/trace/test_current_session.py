"""The session a command run by the agent belongs to is read off the trace."""

from __future__ import annotations

from quaere.trace import EvaluationDone, SessionEnd, SessionStart, current_session


def test_outside_a_campaign_the_session_is_zero() -> None:
    assert current_session([]) == 0
    assert current_session([EvaluationDone(candidate_hash="h", correct=True)]) == 0


def test_the_open_session_is_the_last_started_and_not_ended() -> None:
    events = [SessionStart(session=1, agent="x"), SessionEnd(session=1, reason="budget"),
              SessionStart(session=2, agent="x")]
    assert current_session(events) == 2
    assert current_session([*events, SessionEnd(session=2, reason="goal_met")]) == 0
