"""Where a question comes from: the bank's policy, or a person, behind one interface.

:class:`BankSource` fits the moment and the task (architecture, comparison available), never repeats an
entry within a campaign, rotates groups, prefers level-shift and limit-challenge entries on plateaus and
claimed limits, and breaks ties with a hash of the seed, so the same seed and history give the same
question. :class:`HumanSource` shows a person the same suggestions and takes their pick, edit or own text
through an injected callable (library code never reads a terminal).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from quaere.questions.bank import Bank, BankEntry
from quaere.records import Moment, QuestionKind
from quaere.trace import QuestionAsked, TraceEvent

# On these moments the source study's large gains followed questions that changed level or contested a limit.
# Order matters: a claimed limit is first contested, a plateau first moved to another level.
PREFERRED_KINDS: dict[Moment, tuple[QuestionKind, ...]] = {
    Moment.PLATEAU: (QuestionKind.LEVEL_SHIFT, QuestionKind.LIMIT_CHALLENGE),
    Moment.CLAIMED_LIMIT: (QuestionKind.LIMIT_CHALLENGE, QuestionKind.LEVEL_SHIFT),
}

_ARCH_BY_SM = (("blackwell", range(100, 130)), ("hopper", range(90, 100)), ("ampere", (80, 86, 87, 88)))


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TaskContext(Frozen):
    """What a source needs to know about the task to pick a fitting question."""

    arch: str = "none"
    """GPU architecture family: 'ampere', 'hopper', 'blackwell', or 'none' (CPU or unknown)."""
    has_comparison: bool = False
    """The task times at least one comparison implementation."""
    task: str = ""
    """Task name, for messages."""


def arch_of_target(target: str) -> str:
    """'sm_90a' -> 'hopper', 'sm_100a' -> 'blackwell', 'sm_80' -> 'ampere'; anything else -> 'none'."""
    match = re.search(r"(?:sm|compute)_?(\d+)", target)
    if match:
        number = int(match.group(1))
        for name, numbers in _ARCH_BY_SM:
            if number in numbers:
                return name
    return "none"


class Suggestion(Frozen):
    """A bank entry proposed for a moment, its 1-based rank, and why it ranks there."""

    entry: BankEntry
    rank: int
    reason: str


class ChosenQuestion(Frozen):
    """The question that will be asked: its moment, its source, its bank id (None for a person's own
    text), its text and its kind."""

    moment: Moment
    source: Literal["bank", "human"]
    entry_id: str | None = None
    text: str = Field(min_length=1)
    kind: QuestionKind | None = None

    def to_event(self, session: int = 0) -> QuestionAsked:
        """The trace event recording that this question was asked."""
        return QuestionAsked(
            moment=self.moment,
            source=self.source,
            entry_id=self.entry_id,
            text=self.text,
            kind=self.kind,
            session=session,
        )


class BankExhausted(LookupError):
    """No unasked entry of the bank fits this task any more."""


class QuestionSource(Protocol):
    def suggest(self, moment: Moment, context: TaskContext, asked: Sequence[str], n: int = 3) -> list[Suggestion]:
        """Up to ``n`` fitting entries not in ``asked`` (bank ids already asked), best first."""
        ...

    def choose(self, moment: Moment, context: TaskContext, asked: Sequence[str], evidence: str = "") -> ChosenQuestion:
        """The question to ask now; raises :class:`BankExhausted` when nothing fitting is left."""
        ...


def asked_ids(events: Sequence[TraceEvent]) -> list[str]:
    """Bank ids asked so far in the campaign, in order (a person's own text has none)."""
    return [e.entry_id for e in events if isinstance(e, QuestionAsked) and e.entry_id]


def _tiebreak(seed: int, asked_count: int, entry_id: str) -> int:
    return int(hashlib.sha256(f"{seed}:{asked_count}:{entry_id}".encode()).hexdigest()[:16], 16)


class BankSource:
    """The bank's selection policy (see the module docstring); deterministic under ``seed``."""

    def __init__(self, bank: Bank, seed: int = 0) -> None:
        self.bank = bank
        self.seed = seed

    def suggest(self, moment: Moment, context: TaskContext, asked: Sequence[str], n: int = 3) -> list[Suggestion]:
        done = set(asked)
        pool = [e for e in self.bank.entries if e.id not in done and e.fits(context.arch, context.has_comparison)]
        groups_of = {e.id: e.group for e in self.bank.entries}
        last_group = next((groups_of[i] for i in reversed(asked) if i in groups_of), "")
        usage = Counter(groups_of[i] for i in asked if i in groups_of)
        preferred = PREFERRED_KINDS.get(moment, ())
        chosen: list[BankEntry] = []
        while pool and len(chosen) < n:
            shown = frozenset(e.group for e in chosen)
            best = min(
                pool, key=lambda e, shown=shown: self._rank(e, moment, last_group, preferred, shown, usage, len(asked))
            )
            chosen.append(best)
            pool.remove(best)
        return [
            Suggestion(entry=e, rank=r, reason=self._reason(e, moment, last_group, preferred, usage[e.group]))
            for r, e in enumerate(chosen, start=1)
        ]

    def _rank(
        self,
        e: BankEntry,
        moment: Moment,
        last_group: str,
        preferred: tuple[QuestionKind, ...],
        shown: frozenset[str],
        usage: Counter,
        asked_count: int,
    ) -> tuple:
        """Sort key, smaller first: fits the moment, not the group asked last, preferred kind, a group not
        yet among the suggestions, the least-asked group, then a seeded hash."""
        return (
            moment not in e.moments,
            e.group == last_group,
            preferred.index(e.kind) if e.kind in preferred else len(preferred),
            e.group in shown,
            usage[e.group],
            _tiebreak(self.seed, asked_count, e.id),
        )

    @staticmethod
    def _reason(e: BankEntry, moment: Moment, last_group: str, preferred: tuple, used: int) -> str:
        parts = [
            f"fits {moment.value}" if moment in e.moments else f"nothing unasked fits {moment.value}; closest entry"
        ]
        parts.append(f"{e.kind.value}" + (f" (preferred on {moment.value})" if e.kind in preferred else ""))
        parts.append(f"group '{e.group}' asked {used} time(s)" + (", also last" if e.group == last_group else ""))
        return "; ".join(parts)

    def choose(self, moment: Moment, context: TaskContext, asked: Sequence[str], evidence: str = "") -> ChosenQuestion:
        suggestions = self.suggest(moment, context, asked, n=1)
        if not suggestions:
            raise BankExhausted(f"every bank entry that fits task '{context.task}' (arch {context.arch}) was asked")
        entry = suggestions[0].entry
        return ChosenQuestion(moment=moment, source="bank", entry_id=entry.id, text=entry.question, kind=entry.kind)


class Pick(Frozen):
    """The person takes suggestion ``index`` (1-based) as it is."""

    action: Literal["pick"] = "pick"
    index: int = Field(ge=1)


class Edit(Frozen):
    """The person rewrites suggestion ``index`` (1-based); the bank id is kept as its origin."""

    action: Literal["edit"] = "edit"
    index: int = Field(ge=1)
    text: str = Field(min_length=1)


class OwnText(Frozen):
    """The person writes their own question."""

    action: Literal["own"] = "own"
    text: str = Field(min_length=1)
    kind: QuestionKind | None = None


HumanReply = Pick | Edit | OwnText


class HumanPrompt(Frozen):
    """What the person is shown: the moment, why it holds, and the suggestions."""

    moment: Moment
    evidence: str
    suggestions: tuple[Suggestion, ...]


class HumanSource:
    """A person choosing through ``ask_fn``, shown the suggestions of ``suggester`` (usually a BankSource)."""

    def __init__(self, ask_fn: Callable[[HumanPrompt], HumanReply], suggester: QuestionSource, n: int = 3) -> None:
        self.ask_fn = ask_fn
        self.suggester = suggester
        self.n = n

    def suggest(self, moment: Moment, context: TaskContext, asked: Sequence[str], n: int = 3) -> list[Suggestion]:
        return self.suggester.suggest(moment, context, asked, n)

    def choose(self, moment: Moment, context: TaskContext, asked: Sequence[str], evidence: str = "") -> ChosenQuestion:
        suggestions = tuple(self.suggest(moment, context, asked, self.n))
        reply = self.ask_fn(HumanPrompt(moment=moment, evidence=evidence, suggestions=suggestions))
        return resolve_reply(moment, suggestions, reply)


def resolve_reply(moment: Moment, suggestions: Sequence[Suggestion], reply: HumanReply) -> ChosenQuestion:
    """Turn a person's reply into the question to ask; raises ``ValueError`` for a suggestion not shown."""
    if isinstance(reply, OwnText):
        return ChosenQuestion(moment=moment, source="human", entry_id=None, text=reply.text.strip(), kind=reply.kind)
    if not 1 <= reply.index <= len(suggestions):
        raise ValueError(
            f"suggestion {reply.index} does not exist; {len(suggestions)} were shown (1..{len(suggestions)})"
        )
    entry = suggestions[reply.index - 1].entry
    text = reply.text.strip() if isinstance(reply, Edit) else entry.question
    return ChosenQuestion(moment=moment, source="human", entry_id=entry.id, text=text, kind=entry.kind)
