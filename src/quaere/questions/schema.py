"""The schema of one bank entry, validated when the YAML files are read.

A bank file holds one group: a header (``group``, ``set``, ``title``) and its ``entries``. The loader copies
the header's ``group`` and ``set`` into every entry, so an entry is self-contained once loaded.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from quaere.records import Moment, QuestionKind

KNOWN_ARCHS = ("ampere", "hopper", "blackwell")
"""Architectures an entry may require; ``TaskContext.arch`` uses the same names (or 'none')."""

MAX_QUESTION_CHARS = 200


class Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BankSet(str, Enum):
    """Which part of the bank an entry belongs to."""

    CORE = "core"  # neutral: fits any kernel, no comparison implementation presupposed
    COMPARISON = "comparison"  # needs a comparison implementation in the task
    ARCH = "arch"  # tied to one GPU architecture


class Confirmed(Strict):
    status: Literal["confirmed"] = "confirmed"
    """The question was asked in a recorded campaign."""
    trace: str = Field(min_length=1)
    """Name of the trace that shows it asked. 'source-study-h200-family' means: the source study's H200
    traces (reported in its article, not yet published) show questions of this entry's family asked at
    this moment; the match is by family, not by this entry's wording. Re-mark an entry with your own
    campaign's trace once one shows it asked."""


class Unverified(Strict):
    status: Literal["unverified"] = "unverified"
    """Not yet seen asked in a trace; it comes from a public source."""
    source: str = Field(min_length=3)
    """The public source it comes from (e.g. 'CUDA C++ Best Practices Guide')."""


Provenance = Annotated[Confirmed | Unverified, Field(discriminator="status")]


class Requirements(Strict):
    comparison: bool = False
    """True when the question only makes sense if the task has a comparison implementation."""
    arch: tuple[str, ...] = ()
    """Architectures the question applies to (any of them); empty means every architecture."""

    @field_validator("arch")
    @classmethod
    def _known_arch(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [a for a in value if a not in KNOWN_ARCHS]
        if unknown:
            raise ValueError(f"unknown architecture {unknown}; expected some of {list(KNOWN_ARCHS)}")
        return value


class BankEntry(Strict):
    id: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*\.[a-z0-9]+(-[a-z0-9]+)*$")
    """Stable identifier ``group.slug`` (e.g. 'measure.cycles-vs-wall'); never reused for another question."""
    group: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    """The group the entry belongs to (the file header's ``group``)."""
    set: BankSet
    """core, comparison or arch (the file header's ``set``)."""
    moments: tuple[Moment, ...] = Field(min_length=1)
    """The moments at which the question fits."""
    question: str = Field(min_length=10)
    """One sentence ending in '?', at most 200 characters, answerable by a measurement or a reading of code."""
    evidence: str = Field(min_length=10)
    """What answers it: the measurement, counter, listing or experiment to look at."""
    kind: QuestionKind
    """level-shift (moves to another layer), limit-challenge (contests a claimed limit) or information."""
    requires: Requirements = Requirements()
    """What the task must offer for the question to apply (a comparison, an architecture)."""
    provenance: Provenance
    """Confirmed by a named trace, or unverified with the public source it comes from."""

    def fits(self, arch: str, has_comparison: bool) -> bool:
        """Whether the entry applies to a task on ``arch`` with or without a comparison implementation."""
        if self.requires.comparison and not has_comparison:
            return False
        return not self.requires.arch or arch in self.requires.arch


class BankFile(Strict):
    """One YAML file of the bank: a group header and its entries (entries stay raw until validated)."""

    group: str
    """Group of every entry in the file."""
    set: BankSet
    """Set of every entry in the file."""
    title: str
    """What the group is about, one line (shown by ``quaere bank stats``)."""
    entries: list[dict] = Field(min_length=1)
    """The entries; each is validated as a :class:`BankEntry` with ``group`` and ``set`` filled in."""
