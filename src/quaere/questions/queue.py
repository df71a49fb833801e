"""Questions a person queued (``quaere ask --pick/--text``) for the agent's next stop or moment.

The queue is ``ws.question_queue``, an append-only JSON-lines file: a ``push`` line per queued question and
a ``pop`` line per delivered one, so a crash never loses or duplicates a question silently. A pop holds a
lock file beside the queue for its read-decide-append, so two hooks cannot deliver the same question.
"""

from __future__ import annotations

import time
import uuid
from contextlib import AbstractContextManager
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from quaere.jsonl import append_line, exclusive_lock, read_lines
from quaere.questions.sources import ChosenQuestion
from quaere.workspace import Workspace


class _Line(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Push(_Line):
    op: Literal["push"] = "push"
    item: str = Field(description="Unique id of the queued item.")
    ts: float
    question: ChosenQuestion


class Pop(_Line):
    op: Literal["pop"] = "pop"
    item: str
    ts: float


_LINE: TypeAdapter[Push | Pop] = TypeAdapter(Push | Pop)


class QueueEmpty(BaseModel):
    """``pop_next``'s answer when nothing is queued (a value, not ``None``)."""

    model_config = ConfigDict(frozen=True)
    reason: str = "no question queued"


class QueueError(ValueError):
    """The queue file has a line of an unknown shape; the message names the file and the line."""


def _locked(ws: Workspace) -> AbstractContextManager[None]:
    return exclusive_lock(ws.question_queue.with_suffix(".lock"))


def _lines(ws: Workspace) -> list[Push | Pop]:
    parsed: list[Push | Pop] = []
    for number, obj in enumerate(read_lines(ws.question_queue).objects, start=1):
        try:
            parsed.append(_LINE.validate_python(obj))
        except ValidationError as exc:
            raise QueueError(f"{ws.question_queue}: record {number}: {exc.errors()[0]['msg']}") from None
    return parsed


def pending(ws: Workspace) -> list[ChosenQuestion]:
    """Queued questions not yet delivered, oldest first."""
    lines = _lines(ws)
    popped = {line.item for line in lines if isinstance(line, Pop)}
    return [line.question for line in lines if isinstance(line, Push) and line.item not in popped]


def enqueue(ws: Workspace, question: ChosenQuestion) -> str:
    """Queue ``question`` for the next delivery; return the item id."""
    item = uuid.uuid4().hex
    append_line(ws.question_queue, Push(item=item, ts=time.time(), question=question).model_dump(mode="json"))
    return item


def pop_next(ws: Workspace) -> ChosenQuestion | QueueEmpty:
    """Take the oldest queued question (marking it delivered), or :class:`QueueEmpty`."""
    with _locked(ws):
        lines = _lines(ws)
        popped = {line.item for line in lines if isinstance(line, Pop)}
        waiting = [line for line in lines if isinstance(line, Push) and line.item not in popped]
        if not waiting:
            return QueueEmpty()
        first = waiting[0]
        append_line(ws.question_queue, Pop(item=first.item, ts=time.time()).model_dump(mode="json"))
        return first.question
