"""Where a question comes from: the bank's policy, or a person, behind one interface.

:class:`BankSource` asks only entries that fit the moment and whose ``when`` conditions hold in the
evidence (:class:`TaskContext`: task, correctness, the claim made, floors, evaluations), never repeats an
entry within a campaign, asks first what answers the agent's own claim ("memory-bound", "rounding"),
escalates along the moment's ladder when the moment comes back (:mod:`.ladder`), rotates groups, and
breaks ties with a hash of the seed, so the same seed and history give the same question. When nothing
fitting is left it raises :class:`BankExhausted` rather than ask an entry that does not fit.
:class:`HumanSource` shows a person the same suggestions and takes their pick, edit or own text through
an injected callable.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from quaere.questions.bank import Bank, BankEntry
from quaere.questions.ladder import Rung, rung_index, rungs_from
from quaere.questions.situation import TaskContext
from quaere.records import Moment, QuestionKind
from quaere.trace import QuestionAsked, TraceEvent


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Suggestion(Frozen):
    """A bank entry proposed for a moment, its 1-based rank, and why it ranks there."""

    entry: BankEntry
    rank: int
    reason: str


class ChosenQuestion(Frozen):
    """The question that will be asked: its moment, its source, its bank id (None for a person's own
    text), its text, its kind, and why it was chosen (the ladder's rung, the claim it answers)."""

    moment: Moment
    source: Literal["bank", "human", "queue"]
    """``queue``: a person's question (from ``quaere ask``) as the hook delivered it from the signed queue."""
    entry_id: str | None = None
    text: str = Field(min_length=1)
    kind: QuestionKind | None = None
    reason: str = ""

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


class NoQuestion(Frozen):
    """No question fits the moment now (every fitting entry was asked); a value, not ``None``."""

    moment: Moment
    reason: str


class BankExhausted(LookupError):
    """No unasked entry of the bank fits this moment and this evidence any more."""


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


def _answers_claim(entry: BankEntry, context: TaskContext) -> bool:
    return bool(set(entry.when.claims) & context.claims)


class BankSource:
    """The bank's selection policy (see the module docstring); deterministic under ``seed``."""

    def __init__(self, bank: Bank, seed: int = 0) -> None:
        self.bank = bank
        self.seed = seed

    def fitting(self, moment: Moment, context: TaskContext) -> list[BankEntry]:
        """Every entry that fits ``moment`` and whose conditions hold in ``context``, asked or not."""
        return [e for e in self.bank.entries if moment in e.moments and e.fits(context)]

    def suggest(self, moment: Moment, context: TaskContext, asked: Sequence[str], n: int = 3) -> list[Suggestion]:
        done = set(asked)
        pool = [e for e in self.fitting(moment, context) if e.id not in done]
        groups_of = {e.id: e.group for e in self.bank.entries}
        last_group = next((groups_of[i] for i in reversed(asked) if i in groups_of), "")
        usage = Counter(groups_of[i] for i in asked if i in groups_of)
        order = rungs_from(moment, context.streak.get(moment, 0))
        chosen: list[BankEntry] = []
        while pool and len(chosen) < n:
            shown = frozenset(e.group for e in chosen)

            def rank(e: BankEntry, shown: frozenset[str] = shown) -> tuple:
                """Smaller first: a group not yet among the suggestions (so the first suggestion is the
                choice and the others show other groups), an answer to the claim made, the earliest rung,
                not the group asked last, the least-asked group, then a seeded hash."""
                return (
                    e.group in shown,
                    not _answers_claim(e, context),
                    rung_index(e, order),
                    e.group == last_group,
                    usage[e.group],
                    _tiebreak(self.seed, len(asked), e.id),
                )

            best = min(pool, key=rank)
            chosen.append(best)
            pool.remove(best)
        return [
            Suggestion(entry=e, rank=r, reason=self._reason(e, moment, context, order, usage[e.group]))
            for r, e in enumerate(chosen, start=1)
        ]

    @staticmethod
    def _reason(e: BankEntry, moment: Moment, context: TaskContext, order: tuple[Rung, ...], used: int) -> str:
        streak = context.streak.get(moment, 0)
        index = rung_index(e, order)
        rung = f"rung '{order[index].name}' ({order[index].why})" if index < len(order) else "off the ladder"
        parts = [f"fits {moment.value}", f"{moment.value} question {streak + 1} in a row: {rung}"]
        if _answers_claim(e, context):
            parts.append(f"answers the claim of {'/'.join(sorted(set(e.when.claims) & context.claims))}")
        parts.append(f"group '{e.group}' asked {used} time(s)")
        return "; ".join(parts)

    def choose(self, moment: Moment, context: TaskContext, asked: Sequence[str], evidence: str = "") -> ChosenQuestion:
        suggestions = self.suggest(moment, context, asked, n=1)
        if not suggestions:
            fitting = len(self.fitting(moment, context))
            raise BankExhausted(
                f"every bank entry that fits {moment.value} on task '{context.task}' (arch {context.arch}, "
                f"correctness {context.correctness}) was asked ({fitting} of them); none that does not fit is asked"
            )
        s = suggestions[0]
        return ChosenQuestion(
            moment=moment, source="bank", entry_id=s.entry.id, text=s.entry.question, kind=s.entry.kind, reason=s.reason
        )


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
    reason = suggestions[reply.index - 1].reason
    return ChosenQuestion(moment=moment, source="human", entry_id=entry.id, text=text, kind=entry.kind, reason=reason)
