"""The question bank: YAML files shipped with the package, read into validated entries.

``load_bank()`` reads the shipped bank and raises :class:`BankError` on any schema problem;
``read_bank_dir(path)`` reads any folder and returns the problems instead (``quaere bank lint --dir``).
Each problem names the file, the entry id (or its position) and the field.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

import yaml
from pydantic import ValidationError

from quaere.questions.lint import LintProblem, lint
from quaere.questions.schema import BankEntry, BankFile, BankSet
from quaere.validation import field_path

__all__ = [
    "Bank",
    "BankEntry",
    "BankError",
    "BankRead",
    "BankStats",
    "LintProblem",
    "lint",
    "lint_dir",
    "load_bank",
    "read_bank_dir",
    "shipped_bank_dir",
    "stats",
]


class BankError(ValueError):
    """The bank does not load; the message lists every problem with file, entry and field."""


@dataclass(frozen=True)
class Bank:
    """Validated entries in file order, with the title of each group."""

    entries: tuple[BankEntry, ...]
    titles: dict[str, str] = field(default_factory=dict)

    def by_id(self, entry_id: str) -> BankEntry:
        """The entry with ``entry_id``; raises ``KeyError`` naming the id when there is none."""
        for entry in self.entries:
            if entry.id == entry_id:
                return entry
        raise KeyError(f"no bank entry with id '{entry_id}'")

    def in_set(self, bank_set: BankSet) -> tuple[BankEntry, ...]:
        return tuple(e for e in self.entries if e.set is bank_set)


@dataclass(frozen=True)
class BankRead:
    """What a folder of bank files held: the entries that validated and a problem for each that did not."""

    bank: Bank
    problems: tuple[LintProblem, ...]


def shipped_bank_dir() -> Traversable:
    """The folder of YAML files shipped inside the package."""
    return resources.files("quaere.questions") / "bank"


def _field_of(error: dict) -> str:
    return field_path(error["loc"], top="(entry)")


def _read_file(path: Traversable) -> tuple[list[BankEntry], str, str, list[LintProblem]]:
    """Entries, group and title of one file, and its problems."""
    name = path.name
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        return [], "", "", [LintProblem(name, "-", "-", f"not valid YAML: {exc}")]
    try:
        header = BankFile.model_validate(data)
    except ValidationError as exc:
        problems = [LintProblem(name, "-", _field_of(e), e["msg"]) for e in exc.errors()]
        return [], "", "", problems
    entries: list[BankEntry] = []
    problems: list[LintProblem] = []
    for index, raw in enumerate(header.entries):
        label = str(raw.get("id", f"#{index + 1}")) if isinstance(raw, dict) else f"#{index + 1}"
        if not isinstance(raw, dict):
            problems.append(LintProblem(name, label, "(entry)", "expected a mapping"))
            continue
        for key, value in (("group", header.group), ("set", header.set.value)):
            if key in raw and raw[key] != value:
                problems.append(LintProblem(name, label, key, f"'{raw[key]}' differs from the file header ('{value}')"))
        merged = {**raw, "group": header.group, "set": header.set}
        try:
            entries.append(BankEntry.model_validate(merged))
        except ValidationError as exc:
            problems.extend(LintProblem(name, label, _field_of(e), e["msg"]) for e in exc.errors())
    return entries, header.group, header.title, problems


def read_bank_dir(directory: Path | Traversable) -> BankRead:
    """Read every ``*.yaml`` file of ``directory`` (sorted by name); never raises on bad content."""
    files = sorted((p for p in directory.iterdir() if p.name.endswith((".yaml", ".yml"))), key=lambda p: p.name)
    entries: list[BankEntry] = []
    titles: dict[str, str] = {}
    problems: list[LintProblem] = []
    if not files:
        problems.append(LintProblem(str(directory), "-", "-", "no *.yaml bank files here"))
    for path in files:
        file_entries, group, title, file_problems = _read_file(path)
        entries.extend(file_entries)
        problems.extend(file_problems)
        if group:
            titles[group] = title
    return BankRead(bank=Bank(entries=tuple(entries), titles=titles), problems=tuple(problems))


def load_bank(directory: Path | Traversable | None = None) -> Bank:
    """Load the shipped bank (or ``directory``); raise :class:`BankError` if any entry fails the schema."""
    read = read_bank_dir(directory if directory is not None else shipped_bank_dir())
    if read.problems:
        raise BankError("the question bank does not load:\n" + "\n".join(str(p) for p in read.problems))
    return read.bank


def lint_dir(directory: Path | Traversable) -> list[LintProblem]:
    """Schema problems of the files in ``directory`` followed by the lint of the entries that loaded."""
    read = read_bank_dir(directory)
    return [*read.problems, *lint(list(read.bank.entries))]


@dataclass(frozen=True)
class BankStats:
    """Counts of entries; the core-only counters describe the neutral part of the bank."""

    by_set: dict[str, int]
    core_by_group: dict[str, int]
    by_group: dict[str, int]
    by_kind: dict[str, int]
    by_moment: dict[str, int]
    by_provenance: dict[str, int]
    core_by_provenance: dict[str, int]
    arch_by_arch: dict[str, int]


def stats(entries: list[BankEntry] | tuple[BankEntry, ...]) -> BankStats:
    """Counts by set, group, kind, moment and provenance (an entry counts once per moment it fits)."""
    core = [e for e in entries if e.set is BankSet.CORE]
    return BankStats(
        by_set=dict(Counter(e.set.value for e in entries)),
        core_by_group=dict(Counter(e.group for e in core)),
        by_group=dict(Counter(e.group for e in entries)),
        by_kind=dict(Counter(e.kind.value for e in entries)),
        by_moment=dict(Counter(m.value for e in entries for m in e.moments)),
        by_provenance=dict(Counter(e.provenance.status for e in entries)),
        core_by_provenance=dict(Counter(e.provenance.status for e in core)),
        arch_by_arch=dict(Counter(a for e in entries if e.set is BankSet.ARCH for a in e.when.arch)),
    )
