"""Re-added-line churn: how often the agent puts back a line it had taken out.

Definition. The versions are the candidate sources in evaluation order (the ``candidate_hash`` of each
EvaluationDone in trace order; a version equal to the one before it is skipped, a return to an older
version is a new transition). For each transition from version v(i-1) to v(i), a line diff
(``difflib.SequenceMatcher`` over the lines, no auto-junk) gives the deleted lines (``delete`` and
``replace`` spans of the old side) and the added lines (``insert`` and ``replace`` spans of the new side).
Lines are compared as bytes without their line terminator; blank lines (only whitespace) are removed from
both versions before the diff, so adding or removing blank lines never shifts the alignment. An added
line is *re-added* when it is byte-identical to a line deleted in an EARLIER transition (not the same
one: a line moved within one edit is not a re-addition). Every occurrence of an added line counts.
Churn = re-added lines / added lines over the whole campaign (None when nothing was added). The first
version's lines are not "added".
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from quaere.trace import EvaluationDone


class Transition(BaseModel):
    model_config = ConfigDict(frozen=True)
    from_hash: str
    to_hash: str
    added: int
    deleted: int
    readded: int


class Churn(BaseModel):
    model_config = ConfigDict(frozen=True)
    transitions: tuple[Transition, ...]
    added: int
    deleted: int
    readded: int
    fraction: float | None
    """readded / added over the campaign; None when no line was added."""
    missing_versions: tuple[str, ...] = ()
    """Hashes evaluated whose source was not found (skipped: the diff spans the gap)."""


def version_order(events: Sequence[object]) -> tuple[str, ...]:
    """Candidate hashes in evaluation order, with immediate repeats collapsed."""
    order: list[str] = []
    for event in events:
        if isinstance(event, EvaluationDone) and (not order or order[-1] != event.candidate_hash):
            order.append(event.candidate_hash)
    return tuple(order)


def _lines(source: bytes) -> list[bytes]:
    return [line for line in source.splitlines() if line.strip()]


def line_changes(old: bytes, new: bytes) -> tuple[list[bytes], list[bytes]]:
    """(deleted, added) non-blank lines of the line diff from ``old`` to ``new``."""
    a, b = _lines(old), _lines(new)
    deleted: list[bytes] = []
    added: list[bytes] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("delete", "replace"):
            deleted.extend(a[i1:i2])
        if tag in ("insert", "replace"):
            added.extend(b[j1:j2])
    return deleted, added


def churn(versions: Sequence[tuple[str, bytes]]) -> Churn:
    """Churn over ``versions`` = (hash, source bytes) in evaluation order (see the module docstring)."""
    deleted_earlier: set[bytes] = set()
    transitions: list[Transition] = []
    for (old_hash, old), (new_hash, new) in zip(versions, versions[1:], strict=False):
        if old_hash == new_hash:
            continue
        deleted, added = line_changes(old, new)
        readded = sum(1 for line in added if line in deleted_earlier)
        transitions.append(
            Transition(from_hash=old_hash, to_hash=new_hash, added=len(added), deleted=len(deleted), readded=readded)
        )
        deleted_earlier.update(deleted)  # after counting: only EARLIER deletions make a re-addition
    added_total = sum(t.added for t in transitions)
    readded_total = sum(t.readded for t in transitions)
    return Churn(
        transitions=tuple(transitions),
        added=added_total,
        deleted=sum(t.deleted for t in transitions),
        readded=readded_total,
        fraction=readded_total / added_total if added_total else None,
    )


def churn_of_campaign(events: Sequence[object], sources: dict[str, bytes]) -> Churn:
    """Churn over the versions evaluated in ``events``; ``sources`` maps a hash to its source bytes."""
    order = version_order(events)
    present = [(h, sources[h]) for h in order if h in sources]
    missing = tuple(h for h in order if h not in sources)
    return churn(present).model_copy(update={"missing_versions": missing})
