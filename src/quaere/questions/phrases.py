"""Finding claims in an agent's prose: a phrase counts only when the agent asserts it.

"The kernel is memory-bound" is a claim; "this is not a hardware limit", "let me check whether it is
memory-bound" and "is it memory-bound?" are not. A phrase is dropped when its sentence is a question, or
when its clause, before the phrase, holds a negation or a hypothetical marker. Code blocks, inline code and
quoted text are removed first: a log line saying "done" or a quoted question is not the agent's claim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ADVERB = r"(?:now|already|fundamentally|purely|entirely|completely|simply|still|clearly|probably|likely|just|mostly|essentially|basically|effectively|heavily|practically|pretty much)"

CLAIM_PATTERNS: tuple[str, ...] = (
    r"\b(?:hardware|physical|fundamental|theoretical|architectural)\s+(?:limit|ceiling|bound|wall)s?\b",
    r"\b(?:at|hit|hitting|reached|reaching|against)\s+(?:the\s+)?(?:roofline|speed of light|peak bandwidth|bandwidth (?:limit|ceiling)|memory[- ]bandwidth (?:limit|ceiling))\b",
    rf"(?:\b(?:is|are|remains?|stays?|becomes?|we're|it's|that's)|'s|'re)\s+(?:{_ADVERB}\s+)?(?:memory|bandwidth|compute|latency|launch)[- ]bound\b",
    rf"(?:\b(?:is|are|we're|it's|that's|now|already|near|nearly|close to)|'s|'re)\s+(?:{_ADVERB}\s+)?(?:near[- ])?optimal\b",
    r"\b(?:near[- ])?optimal (?:performance|speed|throughput|kernel|implementation|solution|configuration)\b",
    r"\b(?:cannot|can't|can ?not|could not|couldn't|won't)\s+(?:be\s+)?(?:improved|optimi[sz]ed|made (?:any )?faster|go (?:any )?faster|get (?:any )?faster|sped up|speed(?:ed)? up)\b",
    r"\bno (?:further|more) (?:improvements?|optimi[sz]ations?|gains?|speedups?|headroom)(?: (?:is|are) possible| possible| left| available| to be had)\b",
    r"\bnothing (?:left|more) to (?:optimi[sz]e|improve|gain)\b",
    r"\b(?:fully|completely|maximally)\s+optimi[sz]ed\b",
    r"\bas fast as (?:possible|it (?:can|will) (?:get|go|be))\b",
    r"\b(?:i'm|i am|we're|we are|all|everything's|everything is|the (?:work|task|job|optimi[sz]ation) (?:is|has been))\s+(?:now\s+)?(?:done|complete|completed|finished)\b(?!\s+(?:with|for now|yet))",
    r"^(?:done|finished|complete)[.!]*$",
    r"\bdiminishing returns\b",
)

BLAME_PATTERNS: tuple[str, ...] = (
    # tolerance
    r"\b(?:within|inside)\s+(?:the\s+)?(?:\w+\s+)?tolerance\b",
    r"\b(?:just|only|slightly|barely|marginally|a bit|a little)\s+(?:above|over|outside|beyond|exceed\w*|past)\s+(?:the\s+)?(?:\w+\s+)?(?:tolerance|bound|threshold)\b",
    r"\b(?:tolerance|threshold|bound)s?\s+(?:is|are|was|were|seems?|looks?|may be|might be|feels?)\s+(?:\w+\s+)?(?:too|overly|very|extremely)\s+(?:tight|strict|low|small|harsh|conservative)\b",
    r"\b(?:loosen|relax|increase|raise|widen|bump)\w*\s+(?:the\s+)?(?:\w+\s+)?(?:tolerance|threshold|atol|rtol)\b",
    r"\btolerance (?:issue|problem|artifact)s?\b",
    r"\b(?:too|overly) strict\b",
    # noise
    r"\b(?:just|only|merely|simply|probably|likely|basically|due to|because of|caused by|within|from)\s+(?:\w+\s+)?(?:numerical\s+)?noise\b",
    # rounding
    r"\b(?:rounding|round-off|roundoff)\b",
    # flakiness
    r"\bflak(?:y|iness|ily)\b",
    r"\bnon-?determinis\w*",
    r"\b(?:intermittent|sporadic|spurious|random)\s+(?:failure|fail|mismatch|error)s?\b",
    r"\bfalse (?:positive|alarm|failure)s?\b",
    r"\b(?:unlucky|bad luck|bad seed)\b",
    # precision
    r"\b(?:bf16|fp16|half|low|reduced|limited|finite|floating[- ]point|float)\s+precision\b",
    r"\bprecision (?:issue|limit|loss|error|artifact|difference)s?\b",
    r"\bfloating[- ]point (?:error|noise|non-?associativity|difference|reordering|artifact)s?\b",
    r"\b(?:accumulation|summation|reduction) order\b",
    # the reference or the harness
    r"\bthe reference(?:'s)?\s+(?:\w+\s+){0,2}(?:is|was|itself|seems|might be|may be|must be|could be)\s+(?:\w+\s+)?(?:wrong|incorrect|buggy|off|inaccurate|imprecise|broken|less accurate)\b",
    r"\b(?:bug|error|issue|problem|flaw)s?\s+in\s+(?:the\s+)?(?:reference|harness|evaluator|checker|tests?)\b",
    r"\b(?:reference|harness|evaluator|checker)\s+(?:bug|issue|problem|flaw)s?\b",
)

# Before the phrase, in its clause: a negation ("not a hardware limit") or a hypothesis ("whether it is").
_NEGATION = re.compile(
    r"(?:\b(?:not|no|never|nowhere|hardly|neither|nor|without|far from|no longer|rather than|instead of)\b|n't\b)",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"\b(?:if|whether|unless|suppose|supposing|assuming|assume|hypothes\w*|wonder\w*|could it be|might it be|"
    r"rule out|ruling out)\b|\b(?:to|let me|let's|i'll|i will|we'll|need to|should)\s+(?:check|verify|test|determine|"
    r"confirm|see)\b",
    re.IGNORECASE,
)
# A sentence about timing only ("the timing difference is within noise") blames nothing about correctness.
_TIMING_WORDS = re.compile(
    r"\b(?:timings?|times?|speed\w*|faster|slower|latency|ms|tflop\w*|throughput|benchmark\w*|median|spread)\b",
    re.IGNORECASE,
)
_CORRECTNESS_WORDS = re.compile(
    r"\b(?:mismatch\w*|fail\w*|errors?|wrong|incorrect\w*|discrepanc\w*|deviat\w*|max_abs_err|assert\w*|verdicts?|"
    r"correct\w*|outputs?|values?|results?|elements?)\b",
    re.IGNORECASE,
)
_CLAUSE_BREAK = re.compile(
    r"[,;:()\u2014\u2013]|\s-\s|\b(?:but|although|though|however|while|whereas|yet|so)\b", re.IGNORECASE
)
_CODE_OR_QUOTE = re.compile(r"```.*?```|`[^`\n]*`|\"[^\"\n]*\"|\u201c[^\u201d\n]*\u201d", re.DOTALL)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
_MARKER = re.compile(r"\s*(?:[-*+#>]+|\d+[.)])\s")
_PREFIX_WORDS = 12


@dataclass(frozen=True)
class PhraseMatch:
    """A phrase the agent asserted, and the sentence it asserted it in."""

    phrase: str
    sentence: str


def sentences(text: str) -> list[str]:
    """The text's sentences, with code and quoted text removed."""
    plain = _CODE_OR_QUOTE.sub(" ", text)
    return [s.strip() for block in _blocks(plain) for s in _SENTENCE_SPLIT.split(block) if s.strip()]


def _blocks(text: str) -> list[str]:
    """Hard-wrapped prose continues across single newlines; a blank line, a list item or a heading
    (and the line after a heading) starts a new block."""
    blocks: list[list[str]] = [[]]
    after_heading = False
    for line in text.splitlines():
        if not line.strip() or _MARKER.match(line) or after_heading:
            blocks.append([])
        after_heading = line.lstrip().startswith("#")
        if line.strip():
            blocks[-1].append(line.strip())
    return [" ".join(b) for b in blocks if b]


def _asserted(sentence: str, start: int) -> bool:
    """Whether the phrase starting at ``start`` is asserted: no negation or hypothesis in its clause before it."""
    before = sentence[:start]
    breaks = list(_CLAUSE_BREAK.finditer(before))
    clause = before[breaks[-1].end() :] if breaks else before
    window = " ".join(clause.split()[-_PREFIX_WORDS:])
    return not _NEGATION.search(window) and not _HYPOTHETICAL.search(window)


def find_asserted(text: str, patterns: tuple[str, ...]) -> list[PhraseMatch]:
    """Every asserted match of ``patterns`` in ``text``, in order; questions, negations and hypotheses excluded."""
    compiled = [re.compile(p, re.IGNORECASE) for p in patterns]
    found: list[PhraseMatch] = []
    for sentence in sentences(text):
        if sentence.rstrip("*_ ").endswith("?"):
            continue
        for pattern in compiled:
            for match in pattern.finditer(sentence):
                if _asserted(sentence, match.start()):
                    found.append(PhraseMatch(phrase=match.group(0), sentence=sentence))
    return found


def find_claims(text: str) -> list[PhraseMatch]:
    """Claims of a limit or of completion ("hardware limit", "memory-bound", "optimal", "done" ...)."""
    return find_asserted(text, CLAIM_PATTERNS)


def find_blame(text: str) -> list[PhraseMatch]:
    """A failure attributed to tolerance, noise, rounding, flakiness, precision or the reference.

    Sentences about timing alone are left out: noise in a speedup is not an excuse for a wrong result.
    """
    return [
        m
        for m in find_asserted(text, BLAME_PATTERNS)
        if _CORRECTNESS_WORDS.search(m.sentence) or not _TIMING_WORDS.search(m.sentence)
    ]
