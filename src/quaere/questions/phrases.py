"""Reading an agent's prose for two moments: a claimed limit or completion, and a failure explained away.

Deterministic and fast, no model. The text is cut into sentences and clauses (:mod:`.text`); every cue of
the lexicon (:mod:`.cues`) found in an asserted clause adds its family's weight to its moment's score:

- a sentence that asks ('?') asserts nothing; a cue after a hypothesis, a check to run, a retracted or
  reported view ("if", "whether", "let me check", "rather than", "earlier I claimed") counts for nothing;
- a cue turns over under negation in its clause, before it ("not a rounding issue", "n'y a plus de marge")
  or right after it ("further improvement is not possible"); two negations cancel;
- noise or tolerance in a clause about timing only ("the speedups are within noise") is not about a wrong
  output and counts for nothing;
- each family counts at most :data:`FAMILY_CAP` in either direction over a message, so one phrase repeated
  does not outweigh the rest, and a claim buried in a long report counts as much as a short one.

A moment holds on the words when its score reaches :data:`THRESHOLD`. The detectors add the situation
(a failing evaluation, the goal unmet); the labelled sets in ``tests/questions/data`` measure the reading.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from quaere.questions.cues import (
    CAPACITY,
    CORRECTNESS_WORDS,
    COUNTERFACTUAL,
    DIMINISHERS,
    FRENCH_NE,
    FRENCH_PARTICLES,
    FRENCH_QUANTIFIERS,
    NEGATORS,
    POST_NEGATORS,
    PREFIX_WORDS,
    RELATIVE,
    SUSPENDERS,
    TEMPORAL,
    TIMING_WORDS,
    Family,
)
from quaere.questions.lexicon import FAMILIES
from quaere.questions.text import Clause, clause_at, clauses, fold, is_question, sentences
from quaere.records import Moment

THRESHOLD = 1.0
"""Score at which a moment holds on the words alone."""
FAMILY_CAP = 1.5
"""Most one family adds (or takes away) over a whole message."""
_INTENSIFIERS = ("fundamentally", "purely", "entirely", "inherently", "strictly", "simply", "fondamental", "purement")
_BOUNDS = frozenset({"memory_bound", "compute_bound", "latency_bound"})


@dataclass(frozen=True)
class CueHit:
    """One cue found: its family, the signed weight it adds, whether it was negated, the words and sentence."""

    family: str
    moment: Moment
    weight: float
    negated: bool
    phrase: str
    sentence: str


@dataclass(frozen=True)
class PhraseMatch:
    """A phrase the agent asserted, and the sentence it asserted it in."""

    phrase: str
    sentence: str


@dataclass(frozen=True)
class Reading:
    """Every cue of one message, and the verdicts drawn from them."""

    hits: tuple[CueHit, ...]

    def score(self, moment: Moment) -> float:
        """Sum of the weights for ``moment``, each family capped at ±FAMILY_CAP."""
        by_family: dict[str, list[float]] = defaultdict(list)
        for hit in self.hits:
            if hit.moment is moment:
                by_family[hit.family].append(hit.weight)
        total = 0.0
        for weights in by_family.values():
            total += min(FAMILY_CAP, sum(w for w in weights if w > 0))
            total += max(-FAMILY_CAP, sum(w for w in weights if w < 0))
        return total

    def holds(self, moment: Moment) -> bool:
        return self.score(moment) >= THRESHOLD

    def support(self, moment: Moment) -> list[CueHit]:
        """The hits that speak for ``moment``, strongest first."""
        return sorted((h for h in self.hits if h.moment is moment and h.weight > 0), key=lambda h: -h.weight)

    def tags(self, moment: Moment) -> frozenset[str]:
        """Families asserted for ``moment`` (what was claimed: 'memory_bound', 'rounding' ...) when it holds."""
        return frozenset(h.family for h in self.support(moment) if not h.negated) if self.holds(moment) else frozenset()

    def summary(self, moment: Moment) -> str:
        """'word score 1.9 (rounding, harmless): '<phrase>' in '<sentence>'' for the evidence of a detection."""
        support = self.support(moment)
        families = ", ".join(dict.fromkeys(h.family for h in support))
        where = f": '{support[0].phrase}' in '{support[0].sentence}'" if support else ""
        return f"word score {self.score(moment):.1f} ({families or 'no cue'}; holds at {THRESHOLD:.1f}){where}"


def _negations(prefix: str) -> int:
    """Negations in a folded clause prefix; French 'ne ... pas/plus/rien' counts once."""
    found = NEGATORS.findall(prefix)
    if FRENCH_NE.search(prefix):
        particles = {"aucun", "aucune", "rien", "jamais", "guere"}
        return sum(1 for f in found if f.strip() not in particles)
    return len(found) + len([p for p in FRENCH_PARTICLES.findall(prefix) if p == "pas"])


def _about_timing(clause: str) -> bool:
    """The clause speaks of timings and not of outputs."""
    return bool(TIMING_WORDS.search(clause)) and not CORRECTNESS_WORDS.search(clause)


def _hit(family: Family, sentence: str, folded: str, part: Clause, start: int, end: int) -> CueHit | None:
    prefix = " ".join(folded[part.start : start].split()[-PREFIX_WORDS:])
    if SUSPENDERS.search(prefix) or (family.moment is Moment.CLAIMED_LIMIT and TEMPORAL.search(prefix)):
        return None
    clause = folded[part.start : part.end]
    if family.capacity and not CAPACITY.search(prefix):
        return None
    if (family.vetoed and family.vetoed.search(clause)) or (family.required and not family.required.search(folded)):
        return None
    phrase = clause_at(clauses(folded, conjunctions=False), start)
    if family.correctness_topic and _about_timing(folded[phrase.start : phrase.end]):
        return None
    if family.moment is Moment.EXPLAINED_FAILURE and COUNTERFACTUAL.match(folded[end : part.end]):
        return None
    post = POST_NEGATORS.match(RELATIVE.split(folded[end : part.end], maxsplit=1)[0])
    # "aucune optimisation ... n'est possible": the quantifier and the 'ne' after it are one negation
    absorbed = post is not None and FRENCH_NE.match(post.group(0).split()[-1]) and FRENCH_QUANTIFIERS.search(prefix)
    diminished = family.diminishable and bool(DIMINISHERS.search(prefix))
    negated = (_negations(prefix) + diminished + bool(post and not absorbed)) % 2 == 1
    weight = family.negated if negated else family.asserted
    if family.name in _BOUNDS and not negated and any(word in clause for word in _INTENSIFIERS):
        weight += 0.4
    if weight == 0:
        return None
    return CueHit(family.name, family.moment, weight, negated, sentence[start:end], sentence)


def _sentence_hits(sentence: str) -> list[CueHit]:
    folded = fold(sentence)
    parts = clauses(folded)
    best: dict[tuple[str, bool], CueHit] = {}
    for family in FAMILIES:
        for pattern in family.compiled:
            for match in pattern.finditer(folded):
                hit = _hit(family, sentence, folded, clause_at(parts, match.start()), match.start(), match.end())
                key = (family.name, hit.weight > 0) if hit else None
                if hit and key and (key not in best or abs(hit.weight) > abs(best[key].weight)):
                    best[key] = hit
    return list(best.values())


def read_words(text: str) -> Reading:
    """Every cue in the asserted sentences of ``text`` (questions skipped), for both moments."""
    return Reading(tuple(h for s in sentences(text) if not is_question(s) for h in _sentence_hits(s)))


def _matches(reading: Reading, moment: Moment) -> list[PhraseMatch]:
    if not reading.holds(moment):
        return []
    return [PhraseMatch(phrase=h.phrase, sentence=h.sentence) for h in reading.support(moment)]


def find_claims(text: str) -> list[PhraseMatch]:
    """The phrases by which ``text`` claims a limit or completion (empty when it does not)."""
    return _matches(read_words(text), Moment.CLAIMED_LIMIT)


def find_blame(text: str) -> list[PhraseMatch]:
    """The phrases by which ``text`` explains a correctness failure away (empty when it does not)."""
    return _matches(read_words(text), Moment.EXPLAINED_FAILURE)
