"""Attribution: which questions preceded the gains, and of what kind and group.

Definition. For a question at trace position p, ``best_before`` is the best geomean of the correct
evaluations before p (see :mod:`quaere.report.progress`). Its window is the next K EvaluationDone events
after p, whatever else happens between them (a later question's window may overlap: both questions are
credited, since the trace cannot tell them apart). ``best_after`` is the best geomean of the correct
evaluations up to the end of that window (so never below ``best_before``). The gain is
``best_after - best_before``, in units of geomean ratio; it is None when no correct timed evaluation came
before the question (there is nothing to gain over) or when the window holds no evaluation.

Groups (by kind, by group) count their questions, the questions with a positive gain, the sum of the
gains and their mean over the questions whose gain is defined.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

from quaere.report.progress import best_before
from quaere.report.questions import AskedQuestion
from quaere.trace import EvaluationDone


class QuestionGain(BaseModel):
    model_config = ConfigDict(frozen=True)
    question: AskedQuestion
    evaluations_in_window: int
    best_before: float | None
    best_after: float | None
    gain: float | None


class GainGroup(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    questions: int
    with_gain: int
    """Questions whose gain is > 0."""
    total_gain: float
    mean_gain: float | None
    """Mean over the questions whose gain is defined; None when none is."""


class Attribution(BaseModel):
    model_config = ConfigDict(frozen=True)
    k: int
    gains: tuple[QuestionGain, ...]
    by_kind: tuple[GainGroup, ...]
    by_group: tuple[GainGroup, ...]
    largest: tuple[QuestionGain, ...]
    """Questions with a positive gain, largest first (ties: earlier question first), at most ``top``."""


def _window_end(events: Sequence[object], start: int, k: int) -> tuple[int, int]:
    """(index just past the k-th evaluation after ``start``, evaluations seen)."""
    seen = 0
    for index in range(start + 1, len(events)):
        if isinstance(events[index], EvaluationDone):
            seen += 1
            if seen == k:
                return index + 1, seen
    return len(events), seen


def question_gain(events: Sequence[object], question: AskedQuestion, k: int) -> QuestionGain:
    before = best_before(events, question.event_index)
    end, seen = _window_end(events, question.event_index, k)
    after = best_before(events, end) if seen else None
    gain = after - before if before is not None and after is not None else None
    return QuestionGain(question=question, evaluations_in_window=seen, best_before=before, best_after=after, gain=gain)


def _group(gains: Sequence[QuestionGain], key: Callable[[QuestionGain], str]) -> tuple[GainGroup, ...]:
    names = sorted({key(g) for g in gains})
    groups = []
    for name in names:
        members = [g for g in gains if key(g) == name]
        defined = [g.gain for g in members if g.gain is not None]
        groups.append(
            GainGroup(
                name=name,
                questions=len(members),
                with_gain=sum(1 for v in defined if v > 0),
                total_gain=sum(defined),
                mean_gain=sum(defined) / len(defined) if defined else None,
            )
        )
    return tuple(groups)


def attribution(
    events: Sequence[object], questions: Sequence[AskedQuestion], k: int = 3, top: int = 5
) -> Attribution:
    """Gain of each question over its next ``k`` evaluations, grouped by kind and by group."""
    if k < 1:
        raise ValueError(f"k must be at least 1 (got {k})")
    gains = tuple(question_gain(events, q, k) for q in questions)
    positive = sorted(
        (g for g in gains if g.gain is not None and g.gain > 0), key=lambda g: (-g.gain, g.question.number)
    )
    return Attribution(
        k=k,
        gains=gains,
        by_kind=_group(gains, lambda g: g.question.kind.value),
        by_group=_group(gains, lambda g: g.question.group),
        largest=tuple(positive[:top]),
    )
