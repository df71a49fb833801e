"""Which questions were asked, where in the trace, and of what kind and group.

A :class:`~quaere.trace.QuestionAsked` from the bank is classified by its bank entry (``group``, ``kind``);
a person's own question is of kind ``information`` and group ``human`` unless the event names a kind. A
bank id that the bank no longer holds is kept, with group ``not-in-bank`` and kind ``information``, and
listed by :func:`unknown_entries` so the report can say so rather than guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from quaere.records import Moment, QuestionKind
from quaere.trace import QuestionAsked, ToolCall

HUMAN_GROUP = "human"
UNKNOWN_GROUP = "not-in-bank"


@dataclass(frozen=True)
class EntryClass:
    """What the report needs of one bank entry."""

    group: str
    kind: QuestionKind


# Bank id -> its class; built from the bank by quaere.report.inputs, or written by hand in tests.
Catalog = Mapping[str, EntryClass]


class AskedQuestion(BaseModel):
    """One question of the trace, placed and classified."""

    model_config = ConfigDict(frozen=True)
    number: int
    """1-based rank among the questions of the trace."""
    event_index: int
    """0-based index of the QuestionAsked event in the trace."""
    tool_calls_before: int
    """ToolCall events that precede the question in the trace."""
    ts: float
    session: int
    moment: Moment
    source: str
    entry_id: str | None
    text: str
    kind: QuestionKind
    group: str
    in_bank: bool
    """False for a bank id the catalog does not hold (group ``not-in-bank``)."""


def _classify(event: QuestionAsked, catalog: Catalog) -> tuple[QuestionKind, str, bool]:
    if event.entry_id is None:
        return event.kind or QuestionKind.INFORMATION, HUMAN_GROUP, True
    entry = catalog.get(event.entry_id)
    if entry is None:
        return QuestionKind.INFORMATION, UNKNOWN_GROUP, False
    return entry.kind, entry.group, True


def asked_questions(events: Sequence[object], catalog: Catalog) -> tuple[AskedQuestion, ...]:
    """Every QuestionAsked of ``events`` in trace order, with its position and class."""
    questions: list[AskedQuestion] = []
    tool_calls = 0
    for index, event in enumerate(events):
        if isinstance(event, ToolCall):
            tool_calls += 1
        elif isinstance(event, QuestionAsked):
            kind, group, in_bank = _classify(event, catalog)
            questions.append(
                AskedQuestion(
                    number=len(questions) + 1,
                    event_index=index,
                    tool_calls_before=tool_calls,
                    ts=event.ts,
                    session=event.session,
                    moment=event.moment,
                    source=event.source,
                    entry_id=event.entry_id,
                    text=event.text,
                    kind=kind,
                    group=group,
                    in_bank=in_bank,
                )
            )
    return tuple(questions)


def unknown_entries(questions: Sequence[AskedQuestion]) -> tuple[str, ...]:
    """Bank ids asked in the trace that the catalog does not hold, sorted, once each."""
    return tuple(sorted({q.entry_id for q in questions if not q.in_bank and q.entry_id is not None}))
