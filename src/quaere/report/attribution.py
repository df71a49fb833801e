"""Attribution: which questions preceded the gains, and of what kind and group.

Definition. For a question at trace position p, ``best_before`` is the best geomean of the correct
evaluations before p (see :mod:`quaere.report.progress`). Its window is the next K EvaluationDone events
after p, whatever else happens between them (a later question's window may overlap: both questions are
credited, since the trace cannot tell them apart). ``best_after`` is the best geomean of the correct
evaluations up to the end of that window (so never below ``best_before``). The gain is
``best_after - best_before``, in units of geomean ratio; it is None when no correct timed evaluation came
before the question (there is nothing to gain over) or when the window holds no evaluation.

A gain only counts when the kernel changed and the gain exceeds the measured spread: the evaluation that
set ``best_after`` must be of another candidate than the one that set ``best_before`` (the same kernel timed
again differs by noise alone), and the gain must exceed :data:`~quaere.goal.MARGIN_K` standard errors of
the difference of the two geomeans (each evaluation's ``geomean_error``; a trace written before that field
existed counts on the first rule alone). A gain that does not count is kept as ``raw_gain``, with the
reason, and counts as 0.

Groups (by kind, by group) count their questions, the questions with a positive gain, the sum of the
gains and their mean over the questions whose gain is defined.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from enum import Enum

from pydantic import BaseModel, ConfigDict

from quaere.goal import MARGIN_K
from quaere.report.progress import best_before
from quaere.report.questions import AskedQuestion
from quaere.trace import EvaluationDone


class GainRejection(str, Enum):
    """Why a rise of the best geomean after a question is not counted as its gain."""

    SAME_CANDIDATE = "same_candidate"  # the new best is the very kernel that set the old one, timed again
    WITHIN_SPREAD = "within_spread"  # smaller than MARGIN_K standard errors of the two geomeans' difference


class QuestionGain(BaseModel):
    model_config = ConfigDict(frozen=True)
    question: AskedQuestion
    evaluations_in_window: int
    best_before: float | None
    best_after: float | None
    gain: float | None
    """The counted gain: ``best_after - best_before``, or 0.0 when rejected; None when undefined."""
    raw_gain: float | None = None
    """``best_after - best_before`` whether or not it counts."""
    rejected: GainRejection | None = None


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


def _best_event(events: Sequence[object], end: int) -> EvaluationDone | None:
    """The correct evaluation with the best geomean among ``events[:end]`` (the earliest on a tie)."""
    best: EvaluationDone | None = None
    for event in events[:end]:
        if isinstance(event, EvaluationDone) and event.correct and event.geomean_ratio is not None:
            if math.isfinite(event.geomean_ratio) and (best is None or event.geomean_ratio > best.geomean_ratio):
                best = event
    return best


def rejection(before: EvaluationDone, after: EvaluationDone) -> GainRejection | None:
    """Why the rise from ``before``'s geomean to ``after``'s does not count (None: it counts)."""
    if after.candidate_hash == before.candidate_hash:
        return GainRejection.SAME_CANDIDATE
    if before.geomean_error is None or after.geomean_error is None:
        return None  # a trace from before the spread was recorded
    spread = math.hypot(before.geomean_ratio * before.geomean_error, after.geomean_ratio * after.geomean_error)
    if not after.geomean_ratio - before.geomean_ratio > MARGIN_K * spread:
        return GainRejection.WITHIN_SPREAD
    return None


def question_gain(events: Sequence[object], question: AskedQuestion, k: int) -> QuestionGain:
    before = best_before(events, question.event_index)
    end, seen = _window_end(events, question.event_index, k)
    after = best_before(events, end) if seen else None
    raw = after - before if before is not None and after is not None else None
    why = None
    if raw is not None and raw > 0:
        old, new = _best_event(events, question.event_index), _best_event(events, end)
        why = rejection(old, new) if old is not None and new is not None else None
    return QuestionGain(question=question, evaluations_in_window=seen, best_before=before, best_after=after,
                        gain=0.0 if why is not None else raw, raw_gain=raw, rejected=why)


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
