"""The hooks' two question-side parts, one implementation each, for the hook command and for a campaign.

:class:`QueuedQuestions` is the hooks' ``QuestionPicker``: a question a person queued with ``quaere ask``
first, else its source's choice (the bank's policy or a person) on the evidence of the trace, with the
workspace's seed, exactly as ``quaere ask`` previews it. :class:`Detectors` runs the five detectors of
:mod:`quaere.questions.moments` with given settings as the hooks' ``MomentDetector``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from quaere.questions.moments import DEFAULT_CONFIG, MomentsConfig, detect_moments
from quaere.questions.queue import QueueEmpty, pop_next
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

    def pick(self, moment: Moment, evidence: str) -> ChosenQuestion | NoQuestion:
        queued = pop_next(self.workspace)
        if not isinstance(queued, QueueEmpty):
            return queued
        events = read_trace(self.workspace.trace).events
        try:
            situation = situation_of(events, self.context, self.config.plateau.min_gain_pct)
            return self.source.choose(moment, situation, asked_ids(events), evidence)
        except BankExhausted as exc:
            return NoQuestion(moment=moment, reason=str(exc))


@dataclass(frozen=True)
class Detectors:
    """The five detectors with ``config``, as the hooks' MomentDetector: (moment, evidence) pairs."""

    config: MomentsConfig = DEFAULT_CONFIG

    def detect(self, events: Sequence[TraceEvent], now: float) -> list[tuple[Moment, str]]:
        return [(hit.moment, hit.evidence) for hit in detect_moments(list(events), self.config, now)]
