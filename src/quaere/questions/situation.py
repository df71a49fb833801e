"""The evidence a question is chosen on: the task (architecture, device, comparisons) and the campaign so far.

:func:`context_of` reads the task; :func:`situation_of` adds what the trace shows: whether the latest
evaluation fails correctness, whether floors are known or beaten, what the agent's latest words claimed,
and how many questions in a row each moment has had since it last moved on (the escalation ladder's rung).
The hook and ``quaere ask`` build it from the same trace, so they choose the same question.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from quaere.questions.moments import DEFAULT_PLATEAU
from quaere.questions.phrases import read_words
from quaere.records import Moment
from quaere.task.spec import TaskSpec
from quaere.trace import AgentMessage, EvaluationDone, QuestionAsked, StopAttempt, TraceEvent

KNOWN_ARCHS = ("ampere", "hopper", "blackwell")
"""Architectures an entry may require; ``TaskContext.arch`` uses the same names (or 'none')."""

_ARCH_BY_SM = (("blackwell", range(100, 130)), ("hopper", range(90, 100)), ("ampere", (80, 86, 87, 88)))


class TaskContext(BaseModel):
    """What a source needs to know to pick a fitting question: the task, and the evidence so far.

    The evidence fields default to 'nothing known yet'; :func:`situation_of` fills them from the trace.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    arch: str = "none"
    """GPU architecture family: 'ampere', 'hopper', 'blackwell', or 'none' (CPU or unknown)."""
    has_comparison: bool = False
    """The task times at least one comparison implementation."""
    task: str = ""
    """Task name, for messages."""
    device: Literal["gpu", "cpu", "unknown"] = "unknown"
    """Where the candidate runs; GPU-only entries are never asked on 'cpu'."""
    correctness: Literal["failing", "passing", "unknown"] = "unknown"
    """The latest evaluation's correctness: failing scenarios, all passing, or none judged yet."""
    claims: frozenset[str] = frozenset()
    """What the agent's words since the latest evaluation claimed or blamed (cue families)."""
    evaluations: int = 0
    """Evaluations on record."""
    floors_known: bool = False
    """Some evaluation was correct and timed, so each scenario's roofline floor is known."""
    above_floor: bool = False
    """The latest correct evaluation timed a scenario faster than its roofline floor."""
    streak: dict[Moment, int] = {}
    """Questions asked in a row for each moment since it last moved on (a new best for a plateau or a
    claimed limit, a correct evaluation for a failure explained away)."""


def arch_of_target(target: str) -> str:
    """'sm_90a' -> 'hopper', 'sm_100a' -> 'blackwell', 'sm_80' -> 'ampere'; anything else -> 'none'."""
    match = re.search(r"(?:sm|compute)_?(\d+)", target)
    if match:
        number = int(match.group(1))
        for name, numbers in _ARCH_BY_SM:
            if number in numbers:
                return name
    return "none"


def context_of(spec: TaskSpec) -> TaskContext:
    """Architecture from the target (sm_90a -> hopper ...), the device, and whether comparisons exist."""
    return TaskContext(
        arch=arch_of_target(spec.target),
        has_comparison=bool(spec.comparisons),
        task=spec.name,
        device="cpu" if spec.device == "cpu" else "gpu",
    )


def _streaks(events: Sequence[TraceEvent], min_gain_pct: float) -> dict[Moment, int]:
    """Questions in a row per moment; a new best (by more than ``min_gain_pct``, as the plateau detector
    counts one) moves a plateau and a claimed limit on, a correct evaluation a failure explained away."""
    streak = dict.fromkeys(Moment, 0)
    best = math.nan
    for event in events:
        if isinstance(event, QuestionAsked):
            streak[event.moment] += 1
        elif isinstance(event, EvaluationDone) and event.correct:
            streak[Moment.EXPLAINED_FAILURE] = 0
            ratio = event.geomean_ratio
            if ratio is not None and (math.isnan(best) or ratio > best * (1 + min_gain_pct / 100)):
                best = ratio
                streak[Moment.PLATEAU] = streak[Moment.CLAIMED_LIMIT] = 0
    return streak


def _latest_claims(events: Sequence[TraceEvent]) -> frozenset[str]:
    """Tags of what the agent claimed or blamed in its words after the latest evaluation."""
    tags: set[str] = set()
    for event in reversed(events):
        if isinstance(event, EvaluationDone):
            break
        text = ""
        if isinstance(event, AgentMessage) and event.role == "assistant":
            text = event.text
        elif isinstance(event, StopAttempt):
            text = event.last_message
        if text:
            reading = read_words(text)
            tags |= reading.tags(Moment.CLAIMED_LIMIT) | reading.tags(Moment.EXPLAINED_FAILURE)
    return frozenset(tags)


def situation_of(
    events: Sequence[TraceEvent], context: TaskContext, min_gain_pct: float = DEFAULT_PLATEAU.min_gain_pct
) -> TaskContext:
    """``context`` with the evidence of ``events`` filled in (``min_gain_pct``: what counts as a new best)."""
    evaluations = [e for e in events if isinstance(e, EvaluationDone)]
    correct = [e for e in evaluations if e.correct]
    latest = evaluations[-1] if evaluations else None
    correctness: Literal["failing", "passing", "unknown"] = "unknown"
    if latest is not None and latest.correct:
        correctness = "passing"
    elif latest is not None and latest.failing:
        correctness = "failing"
    return context.model_copy(
        update=dict(
            correctness=correctness,
            claims=_latest_claims(events),
            evaluations=len(evaluations),
            floors_known=any(e.geomean_ratio is not None for e in correct),
            above_floor=bool(correct and correct[-1].above_roofline),
            streak=_streaks(events, min_gain_pct),
        )
    )
