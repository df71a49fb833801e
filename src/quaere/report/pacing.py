"""Tool calls per question: how long the agent works alone after each question.

Definition. Number the questions q1..qn in trace order. For question qi, its count is the number of
ToolCall events strictly after qi and before q(i+1), or before the end of the trace for the last one.
The mean and median are taken over these n counts. Tool calls before the first question are reported
apart (``calls_before_first``) and enter neither statistic. With no question, both are None.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from quaere.trace import QuestionAsked, ToolCall


class Pacing(BaseModel):
    model_config = ConfigDict(frozen=True)
    calls_after_question: tuple[int, ...]
    """For each question, in order: tool calls until the next question (or the end of the trace)."""
    calls_before_first: int
    total_tool_calls: int
    mean: float | None
    median: float | None

    @property
    def questions(self) -> int:
        return len(self.calls_after_question)


def tool_calls_per_question(events: Sequence[object]) -> Pacing:
    """Count the ToolCall events between consecutive QuestionAsked events of ``events``."""
    counts: list[int] = []
    before_first = 0
    total = 0
    for event in events:
        if isinstance(event, QuestionAsked):
            counts.append(0)
        elif isinstance(event, ToolCall):
            total += 1
            if counts:
                counts[-1] += 1
            else:
                before_first += 1
    return Pacing(
        calls_after_question=tuple(counts),
        calls_before_first=before_first,
        total_tool_calls=total,
        mean=statistics.fmean(counts) if counts else None,
        median=float(statistics.median(counts)) if counts else None,
    )
