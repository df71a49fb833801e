"""The report's figures from the signed store, not from files the agent can write.

The workspace's ``.quaere/ledger.jsonl`` and ``.quaere/trace.jsonl`` are the agent's to edit: a report
computed from them reports whatever the agent wrote there. A registered workspace's evaluations are
read from the store (every line verified with its public key, see :mod:`quaere.store`), and every
evaluation summary of the trace (the source of the progress curve and of the gains credited to questions)
is matched, in order, to a signed evaluation of the same candidate and its figures recomputed from that
record. A summary with no signed evaluation behind it is left out, and the report says how many.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from quaere.records import Evaluation
from quaere.trace import EvaluationDone

SUMMARY_FIELDS = ("candidate_hash", "correct", "failing", "ratios", "geomean_ratio", "geomean_error",
                  "above_roofline", "comparison_ratios")
"""The figures of an :class:`EvaluationDone`, all recomputed from the signed record (its time and session
stay the trace's: they place the evaluation in the campaign)."""


@dataclass(frozen=True)
class Corroborated:
    """The trace's events with every evaluation summary backed by a signed record, and what was dropped."""

    events: tuple[object, ...]
    problems: tuple[str, ...]


def corroborate(events: Sequence[object], signed: Sequence[Evaluation],
                summarize: Callable[[Evaluation], EvaluationDone]) -> Corroborated:
    """Each :class:`EvaluationDone` of ``events`` matched to the next unused evaluation of ``signed`` (store
    order) of the same candidate, its figures replaced by ``summarize`` of that record; one with none left
    is dropped. Other events pass unchanged (pure)."""
    unused: dict[str, list[Evaluation]] = {}
    for evaluation in signed:
        unused.setdefault(evaluation.candidate_hash, []).append(evaluation)
    kept: list[object] = []
    dropped = changed = 0
    for event in events:
        if not isinstance(event, EvaluationDone):
            kept.append(event)
            continue
        pending = unused.get(event.candidate_hash)
        if not pending:
            dropped += 1
            continue
        real = summarize(pending.pop(0))
        update = {name: getattr(real, name) for name in SUMMARY_FIELDS}
        changed += any(getattr(event, name) != value for name, value in update.items())
        kept.append(event.model_copy(update=update))
    problems = []
    if dropped:
        problems.append(f"trace: {dropped} evaluation summar{'y' if dropped == 1 else 'ies'} with no signed "
                        "evaluation of that candidate in the store: left out of every figure")
    if changed:
        problems.append(f"trace: {changed} evaluation summar{'y' if changed == 1 else 'ies'} disagreed with the "
                        "signed record: the record's figures are used")
    return Corroborated(tuple(kept), tuple(problems))


def unsigned_ledger_lines(ledger: Sequence[Evaluation], signed: Sequence[Evaluation]) -> str:
    """One problem line when the workspace's ledger copy holds evaluations the store does not ('' when
    none): they are the agent's writing, and the report leaves them out."""
    known = {(e.candidate_hash, e.created_at) for e in signed}
    extra = sum((e.candidate_hash, e.created_at) not in known for e in ledger)
    if not extra:
        return ""
    return (f"ledger: {extra} evaluation record{'s' if extra != 1 else ''} in the workspace's ledger "
            "copy are not in the signed store: left out")
