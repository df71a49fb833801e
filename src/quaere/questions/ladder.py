"""Escalation: what to ask when the same moment comes back, rung by rung.

Twelve plateaus in a row should not get twelve level-shift questions. Each moment has a ladder of rungs;
the n-th question in a row for a moment (``TaskContext.streak``, reset when the moment moves on) starts at
rung n (cycling), and a rung whose fitting entries are all asked passes to the next. On these moments the
source study's large gains followed questions that changed level or contested a limit, so those rungs
come first; a comparison gap and a reframing of the search follow.
"""

from __future__ import annotations

from dataclasses import dataclass

from quaere.questions.schema import BankEntry
from quaere.records import Moment, QuestionKind

_ANY_KIND: frozenset[QuestionKind] = frozenset()


@dataclass(frozen=True)
class Rung:
    """One step of a ladder: the kinds and groups of entries it admits (empty means any) and why."""

    name: str
    why: str
    kinds: frozenset[QuestionKind] = _ANY_KIND
    groups: frozenset[str] = frozenset()

    def admits(self, entry: BankEntry) -> bool:
        return (not self.kinds or entry.kind in self.kinds) and (not self.groups or entry.group in self.groups)


_LEVEL = Rung(
    "level-shift", "move the work to another layer of the system", kinds=frozenset({QuestionKind.LEVEL_SHIFT})
)
_LIMIT = Rung(
    "limit-challenge", "ask for the measurement behind the limit", kinds=frozenset({QuestionKind.LIMIT_CHALLENGE})
)
_GAP = Rung(
    "comparison-gap",
    "look at where the gap is largest",
    kinds=frozenset({QuestionKind.INFORMATION}),
    groups=frozenset({"comparison", "gap"}),
)
_REFRAME = Rung("reframing", "question the search itself", groups=frozenset({"search", "framing"}))

LADDERS: dict[Moment, tuple[Rung, ...]] = {
    Moment.PLATEAU: (_LEVEL, _LIMIT, _GAP, _REFRAME),
    Moment.CLAIMED_LIMIT: (_LIMIT, _LEVEL, _GAP, _REFRAME),
    Moment.EXPLAINED_FAILURE: (
        Rung("locate", "find where and when the error appears", kinds=frozenset({QuestionKind.INFORMATION})),
        Rung("contest", "ask for the measurement behind the excuse", kinds=frozenset({QuestionKind.LIMIT_CHALLENGE})),
    ),
    Moment.SUSPICIOUS_GAIN: (
        Rung("measurement", "check that the time measured is the work done", groups=frozenset({"bench", "measure"})),
        Rung("mechanism", "ask what explains the size of the gain", groups=frozenset({"gain", "bound", "gap"})),
    ),
    Moment.CAMPAIGN_START: (Rung("framing", "frame the problem before changing code"),),
}


def rungs_from(moment: Moment, streak: int) -> tuple[Rung, ...]:
    """The ladder of ``moment`` in the order to try it after ``streak`` questions in a row."""
    ladder = LADDERS[moment]
    start = streak % len(ladder)
    return ladder[start:] + ladder[:start]


def rung_index(entry: BankEntry, order: tuple[Rung, ...]) -> int:
    """Position of the first rung of ``order`` that admits ``entry`` (len(order) when none does)."""
    return next((i for i, rung in enumerate(order) if rung.admits(entry)), len(order))
