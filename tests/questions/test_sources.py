"""The bank policy (fit, no repeats, rotation, kind preference, determinism) and the human source."""

from __future__ import annotations

import itertools

import pytest

from quaere.questions.bank import load_bank
from quaere.questions.sources import (
    BankExhausted,
    BankSource,
    Edit,
    HumanPrompt,
    HumanSource,
    OwnText,
    Pick,
    TaskContext,
    arch_of_target,
    asked_ids,
)
from quaere.records import Moment, QuestionKind

from .helpers import asked, evaluation

HOPPER = TaskContext(arch="hopper", has_comparison=True, task="t")
CPU = TaskContext(arch="none", has_comparison=False, task="t")


@pytest.fixture(scope="module")
def bank():
    return load_bank()


def campaign(source: BankSource, moment: Moment, context: TaskContext, steps: int) -> list[str]:
    ids: list[str] = []
    for _ in range(steps):
        ids.append(source.choose(moment, context, ids).entry_id)
    return ids


def test_target_to_architecture():
    assert arch_of_target("sm_90a") == "hopper"
    assert arch_of_target("sm_100a") == "blackwell"
    assert arch_of_target("sm_80") == "ampere"
    assert arch_of_target("x86-64") == "none"
    assert arch_of_target("sm_75") == "none"


def test_never_repeats_within_a_campaign(bank):
    ids = campaign(BankSource(bank, seed=1), Moment.PLATEAU, HOPPER, 60)
    assert len(ids) == len(set(ids)) == 60


def test_exhausting_every_fitting_entry_raises(bank):
    source = BankSource(bank, seed=0)
    fitting = [e for e in bank.entries if e.fits("none", False)]
    ids = campaign(source, Moment.EXPLAINED_FAILURE, CPU, len(fitting))
    assert sorted(ids) == sorted(e.id for e in fitting)
    with pytest.raises(BankExhausted):
        source.choose(Moment.EXPLAINED_FAILURE, CPU, ids)


def test_fits_the_moment_first(bank):
    ids = campaign(BankSource(bank, seed=2), Moment.EXPLAINED_FAILURE, CPU, 8)
    assert all(Moment.EXPLAINED_FAILURE in bank.by_id(i).moments for i in ids)


def test_fits_the_task(bank):
    cpu_ids = campaign(BankSource(bank, seed=3), Moment.PLATEAU, CPU, 70)
    assert not any(bank.by_id(i).requires.arch or bank.by_id(i).requires.comparison for i in cpu_ids)
    hopper_ids = campaign(BankSource(bank, seed=3), Moment.PLATEAU, HOPPER, 90)
    groups = {bank.by_id(i).group for i in hopper_ids}
    assert "hopper" in groups and "comparison" in groups
    assert not groups & {"ampere", "blackwell"}


def test_rotates_groups(bank):
    for moment in (Moment.PLATEAU, Moment.SUSPICIOUS_GAIN):
        ids = campaign(BankSource(bank, seed=4), moment, CPU, 25)
        groups = [bank.by_id(i).group for i in ids]
        assert all(a != b for a, b in itertools.pairwise(groups)), groups
    # Without a kind preference, the least-asked group comes next: six moves visit six groups.
    gain_groups = [bank.by_id(i).group for i in campaign(BankSource(bank, seed=4), Moment.SUSPICIOUS_GAIN, CPU, 6)]
    assert len(set(gain_groups)) == 6, gain_groups


def test_prefers_level_shift_and_limit_challenge_on_plateau_and_claims(bank):
    preferred = {QuestionKind.LEVEL_SHIFT, QuestionKind.LIMIT_CHALLENGE}
    for moment in (Moment.PLATEAU, Moment.CLAIMED_LIMIT):
        ids = campaign(BankSource(bank, seed=5), moment, CPU, 6)
        assert all(bank.by_id(i).kind in preferred for i in ids), (moment, ids)
    # On a suspicious gain nothing is preferred: information entries come up.
    ids = campaign(BankSource(bank, seed=5), Moment.SUSPICIOUS_GAIN, CPU, 6)
    assert any(bank.by_id(i).kind is QuestionKind.INFORMATION for i in ids)


def test_deterministic_under_the_seed(bank):
    first = campaign(BankSource(bank, seed=7), Moment.PLATEAU, HOPPER, 20)
    again = campaign(BankSource(bank, seed=7), Moment.PLATEAU, HOPPER, 20)
    assert first == again
    others = {tuple(campaign(BankSource(bank, seed=s), Moment.PLATEAU, HOPPER, 5)) for s in range(8)}
    assert len(others) > 1


def test_suggestions_are_ranked_distinct_groups(bank):
    suggestions = BankSource(bank, seed=0).suggest(Moment.SUSPICIOUS_GAIN, CPU, [], n=3)
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
    first = BankSource(bank, seed=0).choose(Moment.CLAIMED_LIMIT, CPU, [])
    assert first.kind is QuestionKind.LIMIT_CHALLENGE
    plateau = BankSource(bank, seed=0).choose(Moment.PLATEAU, CPU, [])
    assert plateau.kind is QuestionKind.LEVEL_SHIFT
