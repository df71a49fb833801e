"""Lint rules on what a question says: it asks and never tells, it is answerable, it says what it needs.

The method works when the question points the agent at a measurement or a reading whose answer reveals the
opportunity; a question that names the technique ("Would warp specialization help?") gives the answer
away and turns the agent into an implementer of our guess. A list of candidate answers does the same, and
a question about plans or opinions cannot be checked. Near duplicates are found with TF-IDF cosine over
stemmed words and word pairs, on the question and on its evidence: two entries that ask alike and are
answered by the same measurement are one question.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from quaere.questions.schema import BankEntry

Finding = tuple[BankEntry, str, str]
"""(entry, field, message): what a wording rule found; :mod:`.lint` turns it into a LintProblem."""

# Techniques and mechanisms an answer would name; a question may point at what reveals them, not at them.
TECHNIQUE_PATTERNS: tuple[str, ...] = (
    r"\bcp\.async\w*", r"\bldmatrix\b", r"\bmma\.sync\b", r"\bwgmma\b", r"\btcgen05\w*", r"\bcta_group\b",
    r"\btma\b", r"\btensor memory accelerator\b", r"\bmbarriers?\b", r"\bsetmaxnreg\b", r"\bregister reallocation\b",
    r"\bwarp[- ]speciali[sz]\w*", r"\bproducer\b", r"\bconsumer warp\w*", r"\bmulticast\b",
    r"\bdistributed shared memory\b", r"\b(?:thread )?block clusters?\b", r"\bl2 persist\w*",
    r"\baccess (?:policy )?window\b",
    r"\bpersistent (?:kernels?|blocks?|grid|threads?)\b", r"\bsplit[- ]k\b", r"\bstream[- ]k\b", r"\bsplit reduction\b",
    r"\bdouble[- ]buffer\w*", r"\bsoftware pipelin\w*", r"\bmulti-stage pipeline\b",
    r"\bvector(?:i[sz]ed)? (?:loads?|stores?)\b",
    r"\bvectori[sz]\w*", r"\bswizzl\w*", r"\btensor memory\b", r"\btwo-cta\b", r"\bblock-scaled\b", r"\bfp[4-8]\b",
    r"__syncthreads", r"\bcuda::pipeline\b", r"\barrive/wait\b", r"\bwarp shuffles?\b",
    r"\basynchronous cop(?:y|ies)\b",
    r"\bbulk cop(?:y|ies)\b", r"\bprefetch\w*", r"\bkernel fusion\b", r"\bfus(?:e|ing) the\b", r"\blaunch bounds\b",
    r"\bregister cap\b", r"\bloop unrolling\b",
)
_TECHNIQUES = tuple(re.compile(p, re.IGNORECASE) for p in TECHNIQUE_PATTERNS)
_WOULD = re.compile(r"^(?:would|wouldn't|could (?:\w+ ){0,3}(?:help|improve|speed))\b", re.IGNORECASE)
# "(A, B, C)", "(A, B or C)", "such as A, B or C": the candidate answers, listed.
_ANSWER_LIST = re.compile(
    r"\([^()]*,[^()]*(?:,|\bor\b|\band\b)[^()]*\)|\bsuch as\b[^?]*(?:,|\bor\b)|\b(?:e\.g\.|for example|like)\b[^?]*,",
    re.IGNORECASE,
)
_PLAN_OR_OPINION = re.compile(
    r"\bhow will you\b|\bwhat would (?:a|the|your) \w+ look like\b|\bdo you (?:think|believe|expect)\b|"
    r"\bif only one\b|\bwhat (?:speedup )?do you predict\b|\bwhat is your plan\b|\bhow would you\b",
    re.IGNORECASE,
)
# Words that presuppose a GPU; an entry using them must say ``when: {device: gpu}``.
GPU_WORDS = re.compile(
    r"\b(?:sass|ptxas|sms?|warps?|thread blocks?|blocks? per|shared[- ]memory|l2|occupancy|tensor|waves?|gpu|"
    r"bank conflicts?|registers?|dram|sm clock|mma|matrix[- ]unit|launch\w*|resident|stall\w*)\b",
    re.IGNORECASE,
)


def technique_names(question: str) -> list[str]:
    """The technique names found in ``question`` (empty when it names none)."""
    return [m.group(0) for pattern in _TECHNIQUES for m in pattern.finditer(question)]


def find_techniques(entries: Sequence[BankEntry]) -> list[Finding]:
    found = [(e, technique_names(e.question)) for e in entries]
    return [(e, "question", f"names a technique {names}; ask for what would reveal it") for e, names in found if names]


def find_would_form(entries: Sequence[BankEntry]) -> list[Finding]:
    message = "'Would X ...?' hands the agent X; ask for the measurement that shows the need"
    return [(e, "question", message) for e in entries if _WOULD.search(e.question)]


def find_answer_lists(entries: Sequence[BankEntry]) -> list[Finding]:
    return [
        (e, "question", f"lists candidate answers ('{m.group(0)[:40]}'); ask what the measurement shows")
        for e in entries
        if (m := _ANSWER_LIST.search(e.question))
    ]


def find_unanswerable(entries: Sequence[BankEntry]) -> list[Finding]:
    return [
        (e, "question", f"asks for a plan or an opinion ('{m.group(0)}'); no measurement answers it")
        for e in entries
        if (m := _PLAN_OR_OPINION.search(e.question))
    ]


def find_undeclared_gpu(entries: Sequence[BankEntry]) -> list[Finding]:
    return [
        (e, "when", f"mentions {sorted({w.lower() for w in words})} but does not say 'device: gpu'")
        for e in entries
        if e.when.device != "gpu" and (words := GPU_WORDS.findall(e.question + " " + e.evidence))
    ]


_STOPWORDS = frozenset(
    """a an the and or of to in on at by for with from is are be does do did it its this that which what how as than
    then if so any each every you your can could would will not no there their they when where one""".split()
)


def _stem(word: str) -> str:
    for suffix in ("ations", "ation", "ings", "ing", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _terms(text: str) -> Counter[str]:
    words = [_stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOPWORDS and len(w) > 1]
    return Counter(words + [f"{a}_{b}" for a, b in zip(words, words[1:], strict=False)])


def tfidf_vectors(texts: Sequence[str]) -> list[dict[str, float]]:
    """Unit TF-IDF vectors of ``texts`` (stemmed words and word pairs; idf over ``texts``)."""
    docs = [_terms(t) for t in texts]
    df = Counter(term for doc in docs for term in doc)
    vectors = []
    for doc in docs:
        weights = {t: c * math.log((1 + len(docs)) / (1 + df[t])) for t, c in doc.items()}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        vectors.append({t: w / norm for t, w in weights.items()})
    return vectors


def cosine(a: dict[str, float], b: dict[str, float]) -> float:
    return sum(w * b.get(t, 0.0) for t, w in a.items())


def _never_together(a: BankEntry, b: BankEntry) -> bool:
    """Entries for disjoint architectures are never asked in one campaign."""
    return bool(a.when.arch and b.when.arch and not set(a.when.arch) & set(b.when.arch))


def find_duplicates(entries: Sequence[BankEntry], max_question: float, max_combined: float) -> list[Finding]:
    """Pairs whose questions' cosine exceeds ``max_question``, or whose question and evidence cosines
    together exceed ``max_combined``; the later entry of each pair is reported."""
    questions = tfidf_vectors([e.question for e in entries])
    evidence = tfidf_vectors([e.evidence for e in entries])
    found: list[Finding] = []
    for j, b in enumerate(entries):
        for i in range(j):
            a = entries[i]
            if a.id == b.id or _never_together(a, b):
                continue
            q, ev = cosine(questions[i], questions[j]), cosine(evidence[i], evidence[j])
            if q > max_question or q + ev > max_combined:
                message = f"near duplicate of '{a.id}' (question cosine {q:.2f}, evidence {ev:.2f})"
                found.append((b, "question", message))
    return found
