"""Questions a person queued (``quaere ask --pick/--text``) for the agent's next stop or moment.

The queue lives in the evaluation store beside the Stop hook's signed state (``questions.jsonl`` in the
workspace's store folder), never in the workspace: the hook asks what it reads there verbatim, so it must
come from the person, not the agent (red team round 3, F2). Every line is signed with the store's key:
a ``push`` line per queued question and a ``pop`` line per delivered one, so a crash never loses or
duplicates a question silently. A pop holds a lock file beside the queue for its read-decide-append, so
two hooks cannot deliver the same question.

A line that is not valid JSON, not signed, signed by another key or of an unknown shape is *refused*:
never asked, never fatal; each refusal is a note naming the file, the line and what was expected, which
the hook puts on the trace before falling back to the bank.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from quaere.jsonl import append_line, exclusive_lock
from quaere.questions.sources import ChosenQuestion
from quaere.signing import BadSignature, Signer, Verifier
from quaere.store.store import Store, StoreError
from quaere.validation import describe_first

QUEUE_FILE = "questions.jsonl"


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
    """``pop_next``'s answer when nothing is queued (a value, not ``None``), with the lines refused."""

    model_config = ConfigDict(frozen=True)
    reason: str = "no question queued"
    refused: tuple[str, ...] = ()


class Delivery(BaseModel):
    """A queued question taken for delivery, its item id, and the lines refused on the way."""

    model_config = ConfigDict(frozen=True)
    question: ChosenQuestion
    item: str
    refused: tuple[str, ...] = ()


class QueueError(ValueError):
    """The queue cannot be written (no signing key); the message names the file and why."""


@dataclass(frozen=True)
class QueueFile:
    """Where a workspace's queue lives (its store folder) and the key its lines are signed and checked with.

    ``signer`` None: this user can only verify (it cannot queue, nor mark a question delivered).
    """

    folder: Path
    verifier: Verifier
    signer: Signer | None = None

    @property
    def path(self) -> Path:
        return self.folder / QUEUE_FILE


@dataclass(frozen=True)
class QueueRead:
    """The lines that verified, in file order, and a note per line refused."""

    lines: tuple[Push | Pop, ...]
    refused: tuple[str, ...]

    def waiting(self) -> list[Push]:
        popped = {line.item for line in self.lines if isinstance(line, Pop)}
        return [line for line in self.lines if isinstance(line, Push) and line.item not in popped]


def _check(queue: QueueFile, number: int, text: str) -> Push | Pop | str:
    """The verified line, or why it is refused (naming the file, the line and what was expected)."""
    where = f"{queue.path}: line {number}"
    try:
        payload = queue.verifier.verify(json.loads(text))
        return _LINE.validate_python(payload)
    except json.JSONDecodeError as exc:
        return f"{where}: not valid JSON ({exc.msg}); expected a signed push or pop record"
    except BadSignature as exc:
        return f"{where}: {exc}; expected a record signed with the store's key (written by `quaere ask`)"
    except ValidationError as exc:
        return f"{where}: {describe_first(exc)}; expected a push or pop record"


def read_queue(queue: QueueFile) -> QueueRead:
    """Every line of the queue, checked; a missing file reads as empty."""
    if not queue.path.exists():
        return QueueRead((), ())
    lines: list[Push | Pop] = []
    refused: list[str] = []
    with open(queue.path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            checked = _check(queue, number, text)
            if isinstance(checked, str):
                refused.append(checked)
            else:
                lines.append(checked)
    return QueueRead(tuple(lines), tuple(refused))


def store_queue(store: Store, workspace_id: str) -> QueueFile:
    """The workspace's queue in ``store``, with the signing key where this user can read it and write the
    workspace's store folder (the person's ``quaere ask``, hooks of the store's user), else verify-only;
    :class:`StoreError` when the store has no key at all."""
    folder = store.folder(workspace_id)
    try:
        signer = store.signer()
        store.ensure_folder(workspace_id)
        if os.access(folder, os.W_OK):
            return QueueFile(folder, signer, signer)
    except (StoreError, OSError):
        pass  # the key or the folder belongs to the evaluator service: verify only
    return QueueFile(folder, store.verifier())


def _signer(queue: QueueFile) -> Signer:
    if queue.signer is None:
        raise QueueError(f"{queue.path}: this user cannot sign the store's records, so it cannot queue or deliver")
    return queue.signer


def _locked(queue: QueueFile) -> AbstractContextManager[None]:
    return exclusive_lock(queue.path.with_suffix(".lock"))


def pending(queue: QueueFile) -> list[ChosenQuestion]:
    """Queued questions not yet delivered, oldest first (refused lines left out)."""
    return [line.question for line in read_queue(queue).waiting()]


def enqueue(queue: QueueFile, question: ChosenQuestion) -> str:
    """Queue ``question`` (signed) for the next delivery; return the item id. :class:`QueueError` without a key."""
    signer = _signer(queue)
    item = uuid.uuid4().hex
    append_line(queue.path, signer.sign(Push(item=item, ts=time.time(), question=question).model_dump(mode="json")))
    return item


def pop_next(queue: QueueFile) -> Delivery | QueueEmpty:
    """Take the oldest queued question that verifies (signing its pop), or :class:`QueueEmpty`."""
    signer = _signer(queue)
    with _locked(queue):
        found = read_queue(queue)
        waiting = found.waiting()
        if not waiting:
            return QueueEmpty(refused=found.refused)
        first = waiting[0]
        append_line(queue.path, signer.sign(Pop(item=first.item, ts=time.time()).model_dump(mode="json")))
        return Delivery(question=first.question, item=first.item, refused=found.refused)
