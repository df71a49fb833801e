"""The schema of one bank entry, validated when the YAML files are read.

A bank file holds one group: a header (``group``, ``set``, ``title``) and its ``entries``. The loader copies
the header's ``group`` and ``set`` into every entry, so an entry is self-contained once loaded.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from quaere.questions.lexicon import CLAIM_TAGS
from quaere.questions.situation import KNOWN_ARCHS, TaskContext
from quaere.records import Moment, QuestionKind

MAX_QUESTION_CHARS = 200


class Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BankSet(str, Enum):
    """Which part of the bank an entry belongs to."""

    CORE = "core"  # neutral: fits any kernel, no comparison implementation presupposed
    COMPARISON = "comparison"  # needs a comparison implementation in the task
    ARCH = "arch"  # tied to one GPU architecture


FAMILY_TRACE = "source-study-h200-family"


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


def provenance_note(provenance: Confirmed | Unverified) -> str:
    """What the provenance rests on, in words, caveats included."""
    if provenance.status == "unverified":
        return f"unverified: not yet seen asked in a trace; from a public source: {provenance.source}"
    if provenance.trace == FAMILY_TRACE:
        return (
            f"confirmed at family level only ({FAMILY_TRACE}): the source study's article reports questions of "
            "this family asked at this moment in its H200 traces, which are not published; this wording itself "
            "was not seen asked"
        )
    return f"confirmed: asked in trace {provenance.trace}"


class When(Strict):
    """The conditions under which an entry may be asked; each is checked against the evidence
    (:class:`quaere.questions.situation.TaskContext`), and an entry whose condition does not hold is never asked."""

    comparison: bool = False
    """True when the question only makes sense if the task has a comparison implementation."""
    arch: tuple[str, ...] = ()
    """Architectures the question applies to (any of them); empty means every architecture."""
    device: Literal["any", "gpu"] = "any"
    """'gpu' when the question presupposes a GPU (warps, SMs, SASS, shared memory ...); never asked on a CPU task."""
    correctness: Literal["any", "failing", "passing"] = "any"
    """Asked only while the latest evaluation fails ('failing') or passes ('passing') correctness."""
    claims: tuple[str, ...] = ()
    """Asked only when the agent's latest words claimed one of these (cue families of the word detectors,
    e.g. 'memory_bound', 'rounding', 'reference'); empty means no claim is needed."""
    floor: Literal["any", "known", "exceeded"] = "any"
    """'known': some evaluation was timed, so each scenario's roofline floor is known; 'exceeded': a scenario
    was timed faster than its floor."""
    min_evaluations: int = Field(default=0, ge=0)
    """Asked only once this many evaluations are on record (a question about 'the last five changes' needs five)."""

    @field_validator("arch", "claims")
    @classmethod
    def _known(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        what, known = ("architecture", KNOWN_ARCHS) if info.field_name == "arch" else ("claim", tuple(CLAIM_TAGS))
        unknown = [v for v in value if v not in known]
        if unknown:
            raise ValueError(f"unknown {what} {unknown}; expected some of {sorted(known)}")
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
    when: When = When()
    """The conditions under which it may be asked (task, evidence, the claim made); see :class:`When`."""
    provenance: Provenance
    """Confirmed by a named trace, or unverified with the public source it comes from."""

    def fits(self, context: TaskContext) -> bool:
        """Whether every condition of ``when`` holds in ``context`` (the task and the evidence so far)."""
        return self.when_failures(context) == ()

    def when_failures(self, context: TaskContext) -> tuple[str, ...]:
        """The conditions of ``when`` that do not hold in ``context``, in words (empty when it fits)."""
        w, c = self.when, context
        checks = (
            (w.comparison and not c.has_comparison, "needs a comparison implementation"),
            (bool(w.arch) and c.arch not in w.arch, f"needs {'/'.join(w.arch)}"),
            (w.device == "gpu" and c.device == "cpu", "needs a GPU"),
            (w.correctness != "any" and c.correctness != w.correctness, f"needs correctness {w.correctness}"),
            (bool(w.claims) and not set(w.claims) & set(c.claims), f"needs a claim of {'/'.join(w.claims)}"),
            (w.floor == "known" and not c.floors_known, "needs a timed evaluation"),
            (w.floor == "exceeded" and not c.above_floor, "needs a scenario faster than its floor"),
            (c.evaluations < w.min_evaluations, f"needs {w.min_evaluations} evaluations"),
        )
        return tuple(reason for failed, reason in checks if failed)


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
