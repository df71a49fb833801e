"""Rules the bank must keep: counts, unique ids, question form, neutrality, moment coverage, and wording.

The rules are a table (:data:`RULES`) of :class:`Rule` values: a name, the reason the rule exists, and a
check from the entries (and :class:`LintRules`) to problems; each problem carries its rule's name. The
neutrality rule is why the core bank exists apart from the comparison and architecture sets: a first bank
leaned on one case (a reference kernel, the structure of attention), so core entries may not mention
either. The wording rules (a question asks and never tells) live in :mod:`.lint_wording`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace

from pydantic import BaseModel, ConfigDict, Field

from quaere.questions import lint_wording as wording
from quaere.questions.schema import KNOWN_ARCHS, MAX_QUESTION_CHARS, BankEntry, BankSet
from quaere.records import Moment


@dataclass(frozen=True)
class LintProblem:
    """One problem: where (file, or set/group for cross-entry rules), which entry, which field, what."""

    where: str
    entry: str
    field: str
    message: str
    rule: str = ""

    def __str__(self) -> str:
        named = f" [{self.rule}]" if self.rule else ""
        return f"{self.where}: entry '{self.entry}': field '{self.field}': {self.message}{named}"


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
    max_question_cosine: float = Field(default=0.40, gt=0, le=1)
    """Two questions whose TF-IDF cosine (stemmed words and word pairs) exceeds this are near duplicates ..."""
    max_combined_cosine: float = Field(default=0.60, gt=0, le=2)
    """... and so are two entries whose question cosine plus evidence cosine exceeds this."""


def entry_problem(entry: BankEntry, field: str, message: str) -> LintProblem:
    """A problem of one entry, located by its set and group."""
    return LintProblem(f"{entry.set.value}/{entry.group}", entry.id, field, message)


_p = entry_problem


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
    """Core entries need no comparison or architecture; comparison entries need a comparison; arch entries
    an architecture (and a GPU)."""
    problems = []
    for e in entries:
        if e.set is BankSet.CORE and (e.when.comparison or e.when.arch):
            problems.append(_p(e, "when", "a core entry must not need a comparison or an architecture"))
        if e.set is BankSet.COMPARISON and not e.when.comparison:
            problems.append(_p(e, "when", "a comparison entry must say 'comparison: true'"))
        if e.set is BankSet.ARCH and (not e.when.arch or e.when.device != "gpu"):
            problems.append(_p(e, "when", "an arch entry must name its architecture and say 'device: gpu'"))
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
    archs = Counter(a for e in entries if e.set is BankSet.ARCH for a in e.when.arch)
    for arch in KNOWN_ARCHS:
        if archs[arch] < rules.min_per_arch:
            problems.append(
                LintProblem(
                    "arch",
                    "-",
                    "when.arch",
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
                        f"core entries must be neutral; found {found} "
                        "(move it to the comparison set or a task's extras)",
                    )
                )
    return problems


DEFAULT_RULES = LintRules()

Check = Callable[[list[BankEntry], LintRules], list[LintProblem]]


@dataclass(frozen=True)
class Rule:
    """One lint rule: its name, why it exists, and its check."""

    name: str
    rationale: str
    check: Check


def _wording(find: Callable[[list[BankEntry]], list[wording.Finding]]) -> Check:
    return lambda entries, rules: [entry_problem(e, f, m) for e, f, m in find(entries)]


def _duplicates(entries: list[BankEntry], rules: LintRules) -> list[LintProblem]:
    found = wording.find_duplicates(entries, rules.max_question_cosine, rules.max_combined_cosine)
    return [entry_problem(e, f, m) for e, f, m in found]


RULES: tuple[Rule, ...] = (
    Rule("ids", "A trace names questions by id; two entries with one id make it ambiguous.", check_ids),
    Rule("form", "The agent reads one short question; several, or a statement, dilute it.", check_form),
    Rule(
        "sets",
        "A set says what a task must offer; an entry outside its set is asked where it cannot apply.",
        check_sets,
    ),
    Rule("counts", "The published bank's shape: every group and architecture has enough to rotate.", check_counts),
    Rule("moments", "A moment with few entries repeats itself or runs dry within a campaign.", check_moments),
    Rule("neutrality", "Core entries must fit any kernel; a word of one case biases every campaign.", check_neutrality),
    Rule(
        "technique",
        "Naming the technique gives the answer away; the question must point at the measurement that reveals it.",
        _wording(wording.find_techniques),
    ),
    Rule("would-form", "'Would X help?' proposes X instead of asking for evidence.", _wording(wording.find_would_form)),
    Rule("answer-list", "A list of candidate answers is a menu, not a question.", _wording(wording.find_answer_lists)),
    Rule(
        "answerable",
        "A plan or an opinion cannot be checked by one measurement or one reading.",
        _wording(wording.find_unanswerable),
    ),
    Rule(
        "device",
        "An entry about warps, SMs or SASS asked on a CPU task cannot be answered.",
        _wording(wording.find_undeclared_gpu),
    ),
    Rule("duplicates", "Two entries asked alike and answered by the same measurement waste a question.", _duplicates),
)


def lint(entries: list[BankEntry], rules: LintRules = DEFAULT_RULES) -> list[LintProblem]:
    """Every problem every rule finds, each tagged with its rule; an empty list means the bank is fit to ship."""
    return [replace(p, rule=rule.name) for rule in RULES for p in rule.check(list(entries), rules)]
