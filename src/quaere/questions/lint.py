"""Rules the bank must keep: counts, unique ids, distinct texts, question form, neutrality, moment coverage.

Each rule is a named function from the entries (and :class:`LintRules`) to a list of problems; ``lint``
runs them all. The neutrality rule is why the core bank exists apart from the comparison and architecture
sets: a first bank leaned on one case (a reference kernel, the structure of attention), so core entries may
not mention either.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from quaere.questions.schema import KNOWN_ARCHS, MAX_QUESTION_CHARS, BankEntry, BankSet
from quaere.records import Moment


@dataclass(frozen=True)
class LintProblem:
    """One problem: where (file, or set/group for cross-entry rules), which entry, which field, what."""

    where: str
    entry: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: entry '{self.entry}': field '{self.field}': {self.message}"


# Words that presuppose one case: a faster implementation to compare with, or the structure of attention.
NEUTRALITY_PATTERNS: tuple[str, ...] = (
    r"\bsoftmax\w*",
    r"\battention\b",
    r"\bflash\w*",
    r"\bfa[2-4]\b",
    r"\bqk\w*",
    r"\bq\s*[·*@]\s*k\w*",
    r"\bp\s*[·*@]\s*v\b",
    r"\bkv\b",
    r"\bkeys?\s+and\s+values?\b",
    r"\bhead[ _-]?dim\w*",
    r"\bcausal\w*",
    r"\bseq(?:uence)?[ _-]?len\w*",
    r"\blogsumexp\b",
    r"\brow[ _-]?max\w*",
    r"\breference (?:kernel|implementation|library)s?\b",
    r"\bcomparison\b",
    r"\bcompetitor\w*",
    r"\bcudnn\b",
    r"\bcublas\w*",
    r"\bcutlass\b",
)

# Words that carry no content for the near-duplicate check.
_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        """a an the and or of to in on at by for with from is are be does do did it its this that which what how
        as than then if so any each every you your can could would will not no there their they when where""",
    )
)


class LintRules(BaseModel):
    """The numbers the bank must meet; the defaults are the published bank's."""

    model_config = ConfigDict(frozen=True)
    core_entries: int = 101
    """Exact number of core entries."""
    comparison_entries: int = 5
    """Exact number of entries that need a comparison implementation."""
    arch_entries: int = 18
    """Exact number of architecture entries."""
    core_groups: int = 10
    """Exact number of core groups."""
    min_per_group: int = Field(default=6, ge=1)
    """Fewest entries in a core group."""
    min_per_arch: int = Field(default=4, ge=1)
    """Fewest architecture entries for each of ampere, hopper and blackwell."""
    min_per_moment: int = Field(default=8, ge=1)
    """Fewest core entries fitting each of the five moments."""
    max_jaccard: float = Field(default=0.5, gt=0, le=1)
    """Two questions whose content-word sets overlap more than this (Jaccard) are near duplicates."""
    max_similarity: float = Field(default=0.8, gt=0, le=1)
    """Two questions whose character similarity (difflib ratio) exceeds this are near duplicates."""


def _p(entry: BankEntry, field: str, message: str) -> LintProblem:
    return LintProblem(f"{entry.set.value}/{entry.group}", entry.id, field, message)


def check_ids(entries: list[BankEntry], rules: LintRules) -> list[LintProblem]:
    """Ids are unique and start with their group."""
    counts = Counter(e.id for e in entries)
    problems = [_p(e, "id", f"duplicate id ({counts[e.id]} entries)") for e in entries if counts[e.id] > 1]
    problems += [
        _p(e, "id", f"must start with its group '{e.group}.'") for e in entries if not e.id.startswith(e.group + ".")
    ]
    return problems


def check_form(entries: list[BankEntry], rules: LintRules) -> list[LintProblem]:
    """One sentence, a capital first letter, a single '?' at the end, at most 200 characters."""
    problems = []
    for e in entries:
        q = e.question
        if len(q) > MAX_QUESTION_CHARS:
            problems.append(_p(e, "question", f"{len(q)} characters; at most {MAX_QUESTION_CHARS}"))
        if not q.endswith("?") or q.count("?") != 1:
            problems.append(_p(e, "question", "must be one question ending in a single '?'"))
        if not q[:1].isupper():
            problems.append(_p(e, "question", "must start with a capital letter"))
        if re.search(r"[.!;]\s+[A-Z]", q) or "\n" in q:
            problems.append(_p(e, "question", "must be one sentence"))
    return problems


def check_sets(entries: list[BankEntry], rules: LintRules) -> list[LintProblem]:
    """Core entries require nothing; comparison entries require a comparison; arch entries an architecture."""
    problems = []
    for e in entries:
        if e.set is BankSet.CORE and (e.requires.comparison or e.requires.arch):
            problems.append(_p(e, "requires", "a core entry must not require a comparison or an architecture"))
        if e.set is BankSet.COMPARISON and not e.requires.comparison:
            problems.append(_p(e, "requires", "a comparison entry must require 'comparison: true'"))
        if e.set is BankSet.ARCH and not e.requires.arch:
            problems.append(_p(e, "requires", "an arch entry must name its architecture"))
    return problems


def check_counts(entries: list[BankEntry], rules: LintRules) -> list[LintProblem]:
    """101 core / 5 comparison / 18 arch, 10 core groups of at least 6, every architecture represented."""
    problems = []
    by_set = Counter(e.set for e in entries)
    for bank_set, expected in (
        (BankSet.CORE, rules.core_entries),
        (BankSet.COMPARISON, rules.comparison_entries),
        (BankSet.ARCH, rules.arch_entries),
    ):
        if by_set[bank_set] != expected:
            problems.append(LintProblem(bank_set.value, "-", "set", f"{by_set[bank_set]} entries; expected {expected}"))
    groups = Counter(e.group for e in entries if e.set is BankSet.CORE)
    if len(groups) != rules.core_groups:
        problems.append(LintProblem("core", "-", "group", f"{len(groups)} groups; expected {rules.core_groups}"))
    for group, count in sorted(groups.items()):
        if count < rules.min_per_group:
            problems.append(
                LintProblem(f"core/{group}", "-", "group", f"{count} entries; expected at least {rules.min_per_group}")
            )
    archs = Counter(a for e in entries if e.set is BankSet.ARCH for a in e.requires.arch)
    for arch in KNOWN_ARCHS:
        if archs[arch] < rules.min_per_arch:
            problems.append(
                LintProblem(
                    "arch",
                    "-",
                    "requires.arch",
                    f"{archs[arch]} entries for {arch}; expected at least {rules.min_per_arch}",
                )
            )
    return problems


def check_moments(entries: list[BankEntry], rules: LintRules) -> list[LintProblem]:
    """Every moment has enough core entries for a campaign to ask several questions there."""
    counts = Counter(m for e in entries if e.set is BankSet.CORE for m in e.moments)
    return [
        LintProblem(
            "core",
            "-",
            "moments",
            f"{counts[m]} core entries fit '{m.value}'; expected at least {rules.min_per_moment}",
        )
        for m in Moment
        if counts[m] < rules.min_per_moment
    ]


def neutrality_violations(text: str) -> list[str]:
    """The case-specific words found in ``text`` (empty when it is neutral)."""
    return [m.group(0) for pattern in NEUTRALITY_PATTERNS for m in re.finditer(pattern, text, re.IGNORECASE)]


def check_neutrality(entries: list[BankEntry], rules: LintRules) -> list[LintProblem]:
    """No core entry presupposes a comparison implementation or the structure of attention."""
    problems = []
    for e in entries:
        if e.set is not BankSet.CORE:
            continue
        for field in ("question", "evidence"):
            found = neutrality_violations(getattr(e, field))
            if found:
                problems.append(
                    _p(
                        e,
                        field,
                        f"core entries must be neutral; found {found} (move it to the comparison set or a task's extras)",
                    )
                )
    return problems


def _content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z0-9_]+", text.lower()) if w not in _STOPWORDS and len(w) > 1)


def _similar(matcher: difflib.SequenceMatcher, limit: float) -> float:
    """The difflib ratio when it may exceed ``limit`` (cheap upper bounds first), else 0."""
    if matcher.real_quick_ratio() <= limit or matcher.quick_ratio() <= limit:
        return 0.0
    return matcher.ratio()


def check_duplicates(entries: list[BankEntry], rules: LintRules) -> list[LintProblem]:
    """No two questions say nearly the same thing (content-word Jaccard or character similarity)."""
    problems = []
    texts = [e.question.lower() for e in entries]
    words = [_content_words(e.question) for e in entries]
    matcher = difflib.SequenceMatcher(autojunk=False)
    for j, b in enumerate(entries):
        matcher.set_seq2(texts[j])  # seq2 is the one difflib indexes: set it once per row
        for i in range(j):
            a = entries[i]
            if a.id == b.id:
                continue
            jaccard = len(words[i] & words[j]) / max(1, len(words[i] | words[j]))
            ratio = 0.0
            if jaccard > rules.max_jaccard / 2:  # texts alike character by character share many words too
                matcher.set_seq1(texts[i])
                ratio = _similar(matcher, rules.max_similarity)
            if jaccard > rules.max_jaccard or ratio > rules.max_similarity:
                problems.append(
                    _p(
                        b,
                        "question",
                        f"near duplicate of '{a.id}' (word overlap {jaccard:.2f}, similarity {ratio:.2f})",
                    )
                )
    return problems


DEFAULT_RULES = LintRules()

RULES: tuple[Callable[[list[BankEntry], LintRules], list[LintProblem]], ...] = (
    check_ids,
    check_form,
    check_sets,
    check_counts,
    check_moments,
    check_neutrality,
    check_duplicates,
)


def lint(entries: list[BankEntry], rules: LintRules = DEFAULT_RULES) -> list[LintProblem]:
    """Every problem every rule finds; an empty list means the bank is fit to ship."""
    return [problem for rule in RULES for problem in rule(list(entries), rules)]
