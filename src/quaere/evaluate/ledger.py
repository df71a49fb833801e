"""The ledger: one :class:`Evaluation` per line of ``.quaere/ledger.jsonl``, appended with lock and fsync.

Reading never fails on a damaged file: a torn last line (a writer killed mid-write) or a line of another
shape is reported in ``problems`` and every good line is still returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from quaere.jsonl import append_line, read_lines
from quaere.records import Evaluation
from quaere.validation import describe_first


@dataclass(frozen=True)
class LedgerRead:
    """Evaluations in file order, and one note per line that could not be read."""

    evaluations: tuple[Evaluation, ...]
    problems: tuple[str, ...]


def append_evaluation(path: Path, evaluation: Evaluation) -> None:
    """Append ``evaluation`` as one whole, fsynced JSON line (safe under concurrent writers)."""
    append_line(path, evaluation.model_dump(mode="json"))


def read_ledger(path: Path) -> LedgerRead:
    """Every evaluation that parses; a missing file reads as empty."""
    raw = read_lines(path)
    problems = [f"{path}:{number}: not JSON (torn or damaged line): {text[:80]!r}" for number, text in raw.bad_lines]
    evaluations: list[Evaluation] = []
    for index, obj in enumerate(raw.objects, start=1):
        try:
            evaluations.append(Evaluation.model_validate(obj))
        except ValidationError as exc:
            problems.append(f"{path}: record {index}: {describe_first(exc)}")
    return LedgerRead(evaluations=tuple(evaluations), problems=tuple(problems))


def latest_for_hash(ledger: LedgerRead, candidate_hash: str, task: str | None = None) -> Evaluation | None:
    """The most recent evaluation of this candidate (and task, when given); None when it was never evaluated."""
    for evaluation in reversed(ledger.evaluations):
        if evaluation.candidate_hash == candidate_hash and (task is None or evaluation.task == task):
            return evaluation
    return None
