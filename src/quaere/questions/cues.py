"""What a cue is, and the scope rules that decide whether the agent asserted it (English and French).

A :class:`Family` is a kind of cue (the lexicon is :mod:`.lexicon`): evidence for (positive weight) or
against (negative weight) one moment, with the weight it has once negated. Some families turn over under
negation: "there is room for improvement" argues against a claimed limit, "there is no room left" is one;
"a real bug" argues against a failure explained away, "not a real bug" explains it away. A family may
require a companion in the same sentence (a limit word counts when something reaches it), be vetoed by a
word in its clause (a limit 'reached' at 45% of peak), or need a word of capacity before it ("can't be
improved" is a claim, "didn't improve" is the result of one experiment). Everything is written for folded
text (lower case, no accents, plain apostrophes; see :func:`quaere.questions.text.fold`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from quaere.records import Moment


@dataclass(frozen=True)
class Family:
    """Cues of one kind: their weight asserted and negated, why they count, and where they apply."""

    name: str
    moment: Moment
    asserted: float
    negated: float
    rationale: str
    patterns: tuple[str, ...]
    requires: str = ""  # a regex that must also match somewhere in the sentence
    veto: str = ""  # a regex that, found in the cue's clause, cancels it
    capacity: bool = False  # needs a word of ability or possibility before it in its clause
    correctness_topic: bool = False  # ignored in a phrase about timings only
    diminishable: bool = False  # "negligible payoff", "little headroom": a diminisher negates it too
    compiled: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    required: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    vetoed: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", tuple(re.compile(p) for p in self.patterns))
        object.__setattr__(self, "required", re.compile(self.requires) if self.requires else None)
        object.__setattr__(self, "vetoed", re.compile(self.veto) if self.veto else None)


PREFIX_WORDS = 10
"""Negations and hypotheses reach this many words back, within the cue's clause."""

# Before a cue in its clause: these turn it over (counted: two negations cancel).
NEGATORS = re.compile(
    r"\b(?:not|no|zero|never|nothing|none|nobody|nowhere|neither|nor|without|hardly|cannot|impossible|unlikely|doubt|"
    r"far from|no longer|aucune?|rien|jamais|sans|inutile|guere)\b|n't\b|\bne\b|\bn'"
)
DIMINISHERS = re.compile(r"\b(?:negligible|marginal|minimal|little|tiny|insignificant|negligeables?|faibles?|peu de)\b")
FRENCH_NE = re.compile(r"\bne\b|\bn'")
FRENCH_QUANTIFIERS = re.compile(r"\b(?:aucune?|rien|personne|jamais|nul|nulle)\b")
FRENCH_PARTICLES = re.compile(r"\b(?:pas|plus|rien|jamais|aucune?|guere|personne)\b")
CAPACITY = re.compile(
    r"\b(?:can|could|cannot|will|would|able|possible|impossible|way|path|how|likely|unlikely|expect|peut|peuvent|"
    r"pourra|"
    r"pourrait|possible|moyen|comment|capable)\b|\b(?:can't|won't|wouldn't|couldn't)"
)
# Before a cue: a hypothesis, a check to run, a retracted or reported view, a contrast.
SUSPENDERS = re.compile(
    r"\b(?:if|whether|unless|in case|suppose|supposing|assuming|could it be|might it be|wonder\w*|"
    r"to (?:check|verify|see|test|rule out|determine|confirm|find out)|rule out|ruling out|"
    r"(?:let me|let's|i'll|i will|i need to|need to|i want to|we should|should|must) (?:check|verify|see|test|"
    r"rule out|determine|confirm|measure|compare)|before (?:blaming|concluding|assuming|calling)|rather than|"
    r"instead of|claim(?:ed|ing)?|assumed|suspected earlier|(?:first|initially|originally) suspected|idea that|"
    r"earlier i|thought|at first|initially|originally|"
    r"tempting to|tempted to|tried to|too (?:early|soon) to|premature to|guess|hypothes\w*|theory that|one could say|"
    r"it would be easy to|au debut|d'abord cru|"
    r"si|est-ce que|au cas ou|a moins que|verifier (?:si|que)|avant de|plutot que|au lieu de|"
    r"(?:too|far|much|way|well) (?:large|big|larger|bigger|beyond|above|more|systematic)|larger than any|beyond what)\b"
)
# Before a claim only: a condition not yet met ("once all optimizations are complete, I'll ...").
TEMPORAL = re.compile(r"\b(?:once|until|when|after|before|quand|une fois que|lorsque|des que|jusqu'a ce que)\b")
# Right after a cue in its clause: "further improvement is not possible", "rounding doesn't explain it".
POST_NEGATORS = re.compile(
    r"^\W*(?:\w+\W+){0,3}?(?:(?:is|are|was|were|seems?|looks?|appears?|remains?|would be|will be|be|"
    r"turned out(?: to be)?)\s+"
    r"(?:not|never|hardly|impossible|unlikely|infeasible|out of reach|marginal|negligible|minimal|"
    r"insignificant|ruled out|excluded|wrong|false|mistaken|incorrect|premature|unnecessary|pointless|futile|"
    r"useless)\b|(?:isn't|aren't|wasn't|won't|wouldn't|can't|cannot|doesn't|didn't|"
    r"will not|would not|does not|did not)\b|(?:serai\w*|sont|est)\s+(?:marginaux|marginal\w*|negligeables?|"
    r"faibles?)\b|(?:would |will )?requires? (?:new |different |a faster |better )?"
    r"(?:hardware|gpu|card)|n'|ne\b|(?:est|sont|semble|serait)\s+(?:impossible|exclue?|negligeable|marginal))"
)
# A relative clause after a cue is about something else ("a corner case that real inputs won't hit").
RELATIVE = re.compile(r"\b(?:that|which|who|que|qui)\b")
# Right after a failure cue: a counterfactual ("rounding errors would be random") asserts nothing.
COUNTERFACTUAL = re.compile(r"^\W*(?:\w+\W+){0,1}?(?:would|could|might) (?:be|have|look|show|produce|give|explain)\b")
# A phrase about timings only: noise or tolerance there says nothing about a wrong output.
TIMING_WORDS = re.compile(
    r"\b(?:timings?|times?|speed\w*|faster|slower|latency|ms|tflop\w*|throughput|benchmarks?|median|runs?|"
    r"run-to-run|measure\w*|mesure\w*|gain|repetitions|spread|noisy|variants?|speedups?|payoff|tuning|"
    r"performance|optimi[sz]ation\w*|bandwidth|peak|roofline|tb/s|gb/s|temps|duree|vitesse|debit|chronometr\w*|"
    r"improv\w*)\b"
)
CORRECTNESS_WORDS = re.compile(
    r"\b(?:mismatch\w*|fail\w*|errors?|wrong|incorrect\w*|discrepanc\w*|deviat\w*|max_abs_err|assert\w*|verdicts?|"
    r"correct\w*|outputs?|values?|elements?|erreurs?|ecarts?|echec|echoue\w*|check\w*|tests?|verification)\b"
)
