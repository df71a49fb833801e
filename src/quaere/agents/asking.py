"""The campaign's two question-side parts, as the hook handlers' Protocols want them.

:class:`CampaignQuestions` turns a question source of :mod:`quaere.questions.sources` (the bank's policy or
a person) into the hooks' ``QuestionPicker``; :class:`ConfiguredDetector` runs the five detectors of
:mod:`quaere.questions.moments` with the campaign's settings as the hooks' ``MomentDetector``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from quaere.hooks.handlers import PickedQuestion
from quaere.questions.moments import MomentsConfig
from quaere.questions.sources import QuestionSource, TaskContext
from quaere.records import Moment
from quaere.trace import TraceEvent, read_trace
from quaere.workspace import Workspace


@dataclass
class CampaignQuestions:
    """The campaign's question picker: a question queued with ``quaere ask`` first, else ``source``.

    ``source`` is a :class:`quaere.questions.sources.BankSource` or ``HumanSource``; the bank ids already
    asked are read from the trace, so a resumed campaign never repeats one.
    """

    workspace: Workspace
    source: QuestionSource
    context: TaskContext

    def pick(self, moment: Moment, evidence: str) -> PickedQuestion | None:
        from quaere.questions.queue import pop_next
        from quaere.questions.sources import BankExhausted, ChosenQuestion, asked_ids

        queued = pop_next(self.workspace)
        chosen = queued if isinstance(queued, ChosenQuestion) else None
        if chosen is None:
            asked = asked_ids(read_trace(self.workspace.trace).events)
            try:
                chosen = self.source.choose(moment, self.context, asked, evidence)
            except BankExhausted:
                return None
        return PickedQuestion(text=chosen.text, source=chosen.source, entry_id=chosen.entry_id, kind=chosen.kind)


@dataclass(frozen=True)
class ConfiguredDetector:
    """The five detectors of :mod:`quaere.questions.moments` with the campaign's settings."""

    config: MomentsConfig

    def detect(self, events: Sequence[TraceEvent], now: float) -> list[tuple[Moment, str]]:
        from quaere.questions.moments import detect_moments

        hits = detect_moments(list(events), self.config, now)
        return [(hit.moment, hit.evidence) for hit in hits]
