"""The hooks' two question-side parts, one implementation each, for the hook command and for a campaign.

:class:`QueuedQuestions` is the hooks' ``QuestionPicker``: a question a person queued with ``quaere ask``
first (signed, in the store: :mod:`quaere.questions.queue`; traced with source ``queue``), else its
source's choice (the bank's policy or a person) on the evidence of the trace, with the workspace's seed,
exactly as ``quaere ask`` previews it. :class:`Detectors` runs the five detectors of
:mod:`quaere.questions.moments` with given settings as the hooks' ``MomentDetector``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from quaere.questions.moments import DEFAULT_CONFIG, MomentsConfig, detect_moments
from quaere.questions.queue import QueueEmpty, QueueFile, pop_next
from quaere.questions.situation import TaskContext, situation_of
from quaere.questions.sources import BankExhausted, ChosenQuestion, NoQuestion, QuestionSource, asked_ids
from quaere.records import Moment
from quaere.trace import TraceEvent, read_trace
from quaere.workspace import Workspace


@dataclass(frozen=True)
class QueuedQuestions:
    """A queued question first, else ``source``'s choice for the moment on the trace's evidence.

    The bank ids already asked are read from the trace, so a resumed campaign never repeats one.
    """

    workspace: Workspace
    source: QuestionSource
    context: TaskContext
    config: MomentsConfig = DEFAULT_CONFIG
    """The detectors' settings: what counts as a new best (which ends a ladder) comes from them."""
    queue: QueueFile | str = "no question queue was given"
    """The store's signed queue, or why none is read (then only ``source`` asks)."""

    def pick(self, moment: Moment, evidence: str) -> ChosenQuestion | NoQuestion:
        """The queue's oldest verified question (source ``queue``), else ``source``'s choice. Never raises for
        the queue: a refused line or an unusable queue is a note in the answer's reason (which the hook
        traces with the moment), and the bank asks."""
        queued, notes = self._queued()
        if queued is not None:
            return queued.model_copy(update={"reason": "; ".join((*notes, queued.reason) if queued.reason else notes)})
        events = read_trace(self.workspace.trace).events
        try:
            situation = situation_of(events, self.context, self.config.plateau.min_gain_pct)
            chosen = self.source.choose(moment, situation, asked_ids(events), evidence)
            reason = chosen.reason
        except BankExhausted as exc:
            chosen, reason = None, str(exc)
        reason = "; ".join((*notes, reason) if reason else notes)
        if chosen is None:
            return NoQuestion(moment=moment, reason=reason)
        return chosen.model_copy(update={"reason": reason})

    def _queued(self) -> tuple[ChosenQuestion | None, tuple[str, ...]]:
        """The delivered question (source ``queue``) or None, and the notes on what was refused and why."""
        notes: tuple[str, ...] = ()
        legacy = self.workspace.question_queue
        if legacy.exists() and legacy.stat().st_size:
            notes += (f"queue refused: {legacy} is ignored (the workspace is the agent's to write; "
                      "`quaere ask` queues in the store)",)
        if isinstance(self.queue, str):
            return None, (*notes, f"queue not read: {self.queue}")
        try:
            taken = pop_next(self.queue)
        except (OSError, ValueError) as exc:
            return None, (*notes, f"queue not read: {exc}")
        notes += tuple(f"queue line refused: {why}" for why in taken.refused)
        if isinstance(taken, QueueEmpty):
            return None, notes
        delivered = taken.question.model_copy(update={"source": "queue"})
        return delivered, (*notes, f"queued by `quaere ask` (item {taken.item}, signature checked)")


@dataclass(frozen=True)
class Detectors:
    """The five detectors with ``config``, as the hooks' MomentDetector: (moment, evidence) pairs."""

    config: MomentsConfig = DEFAULT_CONFIG

    def detect(self, events: Sequence[TraceEvent], now: float) -> list[tuple[Moment, str]]:
        return [(hit.moment, hit.evidence) for hit in detect_moments(list(events), self.config, now)]
