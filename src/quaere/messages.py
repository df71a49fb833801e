"""Failure messages for a terminal: each one printable line, said once for every scenario that shares it.

A compiler log or a runner's stderr tail carries whatever bytes the candidate put there (a binary file
given as source, a kernel that prints escape sequences): control bytes are stripped before anything is
shown. The records keep the whole text; these functions only shape what a person reads.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from quaere.records import Verdict

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 and C1 control characters except tab and newline (ESC included: no terminal escape sequence)."""

IDS_NAMED = 3
"""How many scenario ids a shared failure names before it counts the rest."""


def printable(text: str) -> str:
    """``text`` with carriage returns turned into line ends and every other control byte removed."""
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def one_line(detail: str, artifact: str = "") -> str:
    """``detail`` as one printable line: its first line whole, and its last when there are more (the end of
    a stderr tail or a traceback says what happened). ``artifact``, a built library's long cache path, is
    shortened to its file name."""
    text = printable(detail)
    if artifact:
        text = text.replace(artifact, Path(artifact).name)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else ""
    more = f" ({len(lines) - 2} more lines in the record)" if len(lines) > 2 else ""
    return f"{lines[0]} ... {lines[-1]}{more}"


class Failure(Protocol):
    """A scenario's outcome: :class:`~quaere.records.ScenarioVerdict` and the goal's failing scenarios."""

    @property
    def scenario_id(self) -> str: ...

    @property
    def verdict(self) -> Verdict: ...

    @property
    def detail(self) -> str: ...


@dataclass(frozen=True)
class SharedFailure:
    """One verdict and message, and every scenario that got exactly that."""

    verdict: Verdict
    detail: str
    scenario_ids: tuple[str, ...]

    def line(self) -> str:
        """``crashed on 20 scenarios (a, b, c and 17 more): why`` or ``a: crashed: why``."""
        ids = self.scenario_ids
        why = f": {self.detail}" if self.detail else ""
        if len(ids) == 1:
            return f"{ids[0]}: {self.verdict.value}{why}"
        named = ", ".join(ids[:IDS_NAMED]) + (f" and {len(ids) - IDS_NAMED} more" if len(ids) > IDS_NAMED else "")
        return f"{self.verdict.value} on {len(ids)} scenarios ({named}){why}"


def group_failures(failures: Iterable[Failure], artifact: str = "") -> list[SharedFailure]:
    """Failures grouped by verdict and one-line message, in order of first appearance."""
    groups: dict[tuple[Verdict, str], list[str]] = {}
    for failure in failures:
        key = (failure.verdict, one_line(failure.detail, artifact))
        groups.setdefault(key, []).append(failure.scenario_id)
    return [SharedFailure(verdict, detail, tuple(ids)) for (verdict, detail), ids in groups.items()]


def failure_lines(failures: Sequence[Failure], artifact: str = "", indent: str = "") -> list[str]:
    """One line per distinct failure (see :func:`group_failures`)."""
    return [indent + group.line() for group in group_failures(failures, artifact)]


def fit_lines(text: str, width: int) -> str:
    """``text`` with every line longer than ``width`` wrapped at word boundaries, its continuation lines
    indented two spaces more than the line itself (for a terminal; piped output is left whole)."""
    out = []
    for line in text.splitlines():
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
        out.append(textwrap.fill(line, width=width, subsequent_indent=indent, break_on_hyphens=False,
                                 break_long_words=False) if len(line) > width else line)
    return "\n".join(out)
