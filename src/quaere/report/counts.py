"""Counts of questions (by group, moment and kind) and of stop attempts blocked or allowed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from quaere.report.questions import AskedQuestion
from quaere.trace import StopAttempt, StopDecision


class QuestionCounts(BaseModel):
    model_config = ConfigDict(frozen=True)
    total: int
    by_group: dict[str, int]
    by_moment: dict[str, int]
    by_kind: dict[str, int]
    by_group_and_moment: dict[str, dict[str, int]]
    """group -> moment -> questions; only non-zero cells."""


class StopCounts(BaseModel):
    model_config = ConfigDict(frozen=True)
    attempts: int
    """StopAttempt events (the agent tried to end its turn)."""
    blocked: int
    """StopDecision events with decision 'block'."""
    allowed: int
    by_goal_status: dict[str, int]
    """StopDecision events per goal status (met, unmet, stale, ...)."""


def _sorted(counter: Counter[str]) -> dict[str, int]:
    return dict(sorted(counter.items()))


def question_counts(questions: Sequence[AskedQuestion]) -> QuestionCounts:
    cross: dict[str, Counter[str]] = {}
    for q in questions:
        cross.setdefault(q.group, Counter())[q.moment.value] += 1
    return QuestionCounts(
        total=len(questions),
        by_group=_sorted(Counter(q.group for q in questions)),
        by_moment=_sorted(Counter(q.moment.value for q in questions)),
        by_kind=_sorted(Counter(q.kind.value for q in questions)),
        by_group_and_moment={g: _sorted(c) for g, c in sorted(cross.items())},
    )


def stop_counts(events: Sequence[object]) -> StopCounts:
    decisions = [e for e in events if isinstance(e, StopDecision)]
    return StopCounts(
        attempts=sum(1 for e in events if isinstance(e, StopAttempt)),
        blocked=sum(1 for d in decisions if d.decision == "block"),
        allowed=sum(1 for d in decisions if d.decision == "allow"),
        by_goal_status=_sorted(Counter(d.goal_status.value for d in decisions)),
    )
