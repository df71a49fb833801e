"""The bank policy (fit, conditions, no repeats, no fallback, escalation, determinism) and the human source."""

from __future__ import annotations

import itertools

import pytest

from quaere.questions.bank import load_bank
from quaere.questions.ladder import LADDERS
from quaere.questions.situation import TaskContext, arch_of_target, situation_of
from quaere.questions.sources import (
    BankExhausted,
    BankSource,
    Edit,
    HumanPrompt,
    HumanSource,
    OwnText,
    Pick,
    asked_ids,
)
from quaere.records import Moment, QuestionKind

from .helpers import asked, evaluation, failure, said

HOPPER = TaskContext(arch="hopper", has_comparison=True, task="t", device="gpu", evaluations=9, floors_known=True)
GPU = TaskContext(arch="none", has_comparison=False, task="t", device="gpu", evaluations=9, floors_known=True)
CPU = TaskContext(arch="none", has_comparison=False, task="t", device="cpu", evaluations=9, floors_known=True)
FAILING = CPU.model_copy(update={"correctness": "failing"})


@pytest.fixture(scope="module")
def bank():
    return load_bank()


def campaign(source: BankSource, moment: Moment, context: TaskContext, steps: int) -> list[str]:
    """``steps`` questions in a row for ``moment``, the streak counted as the trace would."""
    ids: list[str] = []
    for step in range(steps):
        streak = {**context.streak, moment: context.streak.get(moment, 0) + step}
        ids.append(source.choose(moment, context.model_copy(update={"streak": streak}), ids).entry_id)
    return ids


def test_target_to_architecture():
    assert arch_of_target("sm_90a") == "hopper"
    assert arch_of_target("sm_100a") == "blackwell"
    assert arch_of_target("sm_80") == "ampere"
    assert arch_of_target("x86-64") == "none"
    assert arch_of_target("sm_75") == "none"


def test_never_repeats_within_a_campaign(bank):
    fitting = len(BankSource(bank).fitting(Moment.PLATEAU, HOPPER))
    ids = campaign(BankSource(bank, seed=1), Moment.PLATEAU, HOPPER, fitting)
    assert len(ids) == len(set(ids)) == fitting > 40


def test_exhausting_the_fitting_entries_never_falls_back(bank):
    source = BankSource(bank, seed=0)
    fitting = source.fitting(Moment.EXPLAINED_FAILURE, FAILING)
    ids = campaign(source, Moment.EXPLAINED_FAILURE, FAILING, len(fitting))
    assert sorted(ids) == sorted(e.id for e in fitting)
    assert all(Moment.EXPLAINED_FAILURE in bank.by_id(i).moments for i in ids)
    with pytest.raises(BankExhausted, match="none that does not fit is asked"):
        source.choose(Moment.EXPLAINED_FAILURE, FAILING, ids)


def test_conditional_entries_only_when_their_condition_holds(bank):
    source = BankSource(bank, seed=3)
    conditional = {e.id for e in bank.entries if e.when.correctness == "failing"}
    passing = CPU.model_copy(update={"correctness": "passing"})
    assert not conditional & {s.entry.id for s in source.suggest(Moment.EXPLAINED_FAILURE, passing, [], n=50)}
    assert conditional & {s.entry.id for s in source.suggest(Moment.EXPLAINED_FAILURE, FAILING, [], n=50)}
    # a claim-specific entry comes only with its claim, and then first on its rung
    plain = {s.entry.id for s in source.suggest(Moment.CLAIMED_LIMIT, GPU, [], n=60)}
    assert "limit.memory-bound-claim" not in plain
    claimed = GPU.model_copy(update={"claims": frozenset({"memory_bound"})})
    assert source.choose(Moment.CLAIMED_LIMIT, claimed, []).entry_id == "limit.memory-bound-claim"
    # a floor beaten and a history long enough are conditions too
    assert "gain.below-floor" not in {s.entry.id for s in source.suggest(Moment.SUSPICIOUS_GAIN, GPU, [], n=60)}
    beaten = GPU.model_copy(update={"above_floor": True})
    assert "gain.below-floor" in {s.entry.id for s in source.suggest(Moment.SUSPICIOUS_GAIN, beaten, [], n=60)}
    fresh = GPU.model_copy(update={"evaluations": 1})
    assert not {s.entry.id for s in source.suggest(Moment.PLATEAU, fresh, [], n=80)} & {"search.shared-assumption"}


def test_gpu_entries_are_never_asked_on_a_cpu_task(bank):
    for moment in Moment:
        fitting = BankSource(bank).fitting(moment, CPU.model_copy(update={"correctness": "failing"}))
        assert fitting, moment
        assert all(e.when.device != "gpu" for e in fitting), moment
    hopper_ids = campaign(BankSource(bank, seed=3), Moment.PLATEAU, HOPPER, 60)
    groups = {bank.by_id(i).group for i in hopper_ids}
    assert "hopper" in groups and "comparison" in groups
    assert not groups & {"ampere", "blackwell"}


def test_repeated_plateaus_climb_the_ladder(bank):
    ids = campaign(BankSource(bank, seed=4), Moment.PLATEAU, HOPPER, 4)
    entries = [bank.by_id(i) for i in ids]
    assert [e.kind for e in entries[:2]] == [QuestionKind.LEVEL_SHIFT, QuestionKind.LIMIT_CHALLENGE]
    assert entries[2].group in {"comparison", "gap"} and entries[3].group in {"search", "framing"}
    twelve = [bank.by_id(i) for i in campaign(BankSource(bank, seed=4), Moment.PLATEAU, HOPPER, 12)]
    assert sum(e.kind is QuestionKind.LEVEL_SHIFT for e in twelve) <= 6
    assert len({LADDERS[Moment.PLATEAU][n % 4].name for n in range(12)}) == 4


def test_the_streak_comes_from_the_trace(bank):
    events = [evaluation(0, 1.0), asked(1, Moment.PLATEAU), asked(2, Moment.PLATEAU), failure(3)]
    situation = situation_of(events, CPU)
    assert situation.streak[Moment.PLATEAU] == 2 and situation.correctness == "failing"
    events += [evaluation(4, 1.5)]  # a new best: the plateau moved on
    assert situation_of(events, CPU).streak[Moment.PLATEAU] == 0
    reason = BankSource(bank).suggest(Moment.PLATEAU, situation, [], n=1)[0].reason
    assert "plateau question 3 in a row" in reason and "comparison-gap" in reason


def test_the_claim_made_comes_from_the_words():
    events = [failure(0), said(1, "That mismatch is just bf16 rounding; moving on.")]
    assert "rounding" in situation_of(events, CPU).claims
    assert situation_of(events + [evaluation(2, 1.0)], CPU).claims == frozenset()


def test_rotates_groups(bank):
    ids = campaign(BankSource(bank, seed=4), Moment.SUSPICIOUS_GAIN, GPU, 12)
    groups = [bank.by_id(i).group for i in ids]
    assert all(a != b for a, b in itertools.pairwise(groups)), groups


def test_deterministic_under_the_seed(bank):
    first = campaign(BankSource(bank, seed=7), Moment.PLATEAU, HOPPER, 20)
    again = campaign(BankSource(bank, seed=7), Moment.PLATEAU, HOPPER, 20)
    assert first == again
    others = {tuple(campaign(BankSource(bank, seed=s), Moment.PLATEAU, HOPPER, 5)) for s in range(8)}
    assert len(others) > 1


def test_suggestions_are_ranked_distinct_groups(bank):
    suggestions = BankSource(bank, seed=0).suggest(Moment.SUSPICIOUS_GAIN, GPU, [], n=3)
    assert [s.rank for s in suggestions] == [1, 2, 3]
    assert len({s.entry.group for s in suggestions}) == 3
    assert all("fits suspicious_gain" in s.reason for s in suggestions)


def test_asked_ids_come_from_the_trace():
    events = [evaluation(0), asked(1, Moment.PLATEAU, "gap.tail-wave"), asked(2, Moment.PLATEAU, None)]
    assert asked_ids(events) == ["gap.tail-wave"]


def test_choose_returns_a_bank_question(bank):
    chosen = BankSource(bank, seed=0).choose(Moment.PLATEAU, CPU, [])
    entry = bank.by_id(chosen.entry_id)
    assert chosen.source == "bank" and chosen.text == entry.question and chosen.kind is entry.kind
    assert "rung 'level-shift'" in chosen.reason
    event = chosen.to_event(session=3)
    assert event.entry_id == entry.id and event.moment is Moment.PLATEAU and event.session == 3


class Person:
    """Answers a HumanSource's prompt with a fixed reply, and keeps what it was shown."""

    def __init__(self, reply):
        self.reply = reply
        self.shown: list[HumanPrompt] = []

    def __call__(self, prompt: HumanPrompt):
        self.shown.append(prompt)
        return self.reply


def test_human_sees_the_bank_suggestions_and_picks(bank):
    person = Person(Pick(index=2))
    bank_source = BankSource(bank, seed=0)
    chosen = HumanSource(person, bank_source).choose(Moment.PLATEAU, CPU, [], evidence="6 evaluations without a best")
    prompt = person.shown[0]
    assert prompt.evidence == "6 evaluations without a best"
    assert [s.entry.id for s in prompt.suggestions] == [
        s.entry.id for s in bank_source.suggest(Moment.PLATEAU, CPU, [])
    ]
    assert chosen.source == "human" and chosen.entry_id == prompt.suggestions[1].entry.id
    assert chosen.text == prompt.suggestions[1].entry.question


def test_human_edits_a_suggestion(bank):
    chosen = HumanSource(Person(Edit(index=1, text="Is the loop issue-bound on d=64?")), BankSource(bank)).choose(
        Moment.PLATEAU, CPU, []
    )
    assert chosen.text == "Is the loop issue-bound on d=64?" and chosen.entry_id is not None


def test_human_writes_their_own(bank):
    reply = OwnText(text="What limits the last 10%?", kind=QuestionKind.LIMIT_CHALLENGE)
    chosen = HumanSource(Person(reply), BankSource(bank)).choose(Moment.CLAIMED_LIMIT, CPU, [])
    assert chosen.entry_id is None and chosen.kind is QuestionKind.LIMIT_CHALLENGE and chosen.source == "human"


def test_human_picking_a_suggestion_not_shown(bank):
    with pytest.raises(ValueError, match="suggestion 9 does not exist"):
        HumanSource(Person(Pick(index=9)), BankSource(bank)).choose(Moment.PLATEAU, CPU, [])


def test_a_claimed_limit_is_contested_first(bank):
    first = BankSource(bank, seed=0).choose(Moment.CLAIMED_LIMIT, GPU, [])
    assert first.kind is QuestionKind.LIMIT_CHALLENGE
    plateau = BankSource(bank, seed=0).choose(Moment.PLATEAU, GPU, [])
    assert plateau.kind is QuestionKind.LEVEL_SHIFT
