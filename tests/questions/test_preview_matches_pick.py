"""``quaere ask`` previews what the hook will ask: suggestion 1 is the hook's pick, over 200 random situations.

Each case writes a random trace (evaluations passing or failing, questions already asked, the agent's
words from the labelled set, stop attempts) into a real workspace, sometimes under a campaign with its
own seed, then compares the preview (:func:`ask_view`) with the pick of the hook's real picker, built as
``quaere hook`` builds it (:func:`build_deps`) or as a campaign builds it.
"""

from __future__ import annotations

import random
from pathlib import Path

import yaml

from quaere.agents.state import CampaignState, save_state
from quaere.hooks.dialect import HookDialect
from quaere.hooks.wiring import build_deps
from quaere.questions.ask import ask_view
from quaere.questions.bank import load_bank
from quaere.questions.moments import MomentsConfig, PlateauConfig
from quaere.questions.picking import QueuedQuestions
from quaere.questions.situation import context_of
from quaere.questions.sources import BankSource, NoQuestion
from quaere.records import Moment
from quaere.store import Store
from quaere.store.pinning import init_workspace
from quaere.task.loader import load_task
from quaere.trace import QuestionAsked, StopAttempt, TraceEvent, TraceWriter
from quaere.workspace import Workspace

from .helpers import evaluation, failure, said

CASES = 200
DEV = Path(__file__).parent / "data" / "messages-dev.yaml"
MESSAGES = [m["text"] for m in yaml.safe_load(DEV.read_text(encoding="utf-8"))["messages"]]


def random_trace(rng: random.Random, bank_ids: list[str]) -> list[TraceEvent]:
    events: list[TraceEvent] = []
    best = 1.0
    for t in range(rng.randint(0, 12)):
        roll = rng.random()
        if roll < 0.45:
            best = max(best, g := rng.uniform(0.5, 3.0))
            events.append(evaluation(t, g, above_roofline=("s-small",) if rng.random() < 0.1 else ()))
        elif roll < 0.6:
            events.append(failure(t))
        elif roll < 0.8:
            events.append(said(t, rng.choice(MESSAGES)))
        elif roll < 0.9:
            moment = rng.choice(list(Moment))
            events.append(QuestionAsked(ts=t, moment=moment, source="bank", entry_id=rng.choice(bank_ids), text="?"))
        else:
            events.append(StopAttempt(ts=t, last_message=rng.choice(MESSAGES)))
    return events


def rewrite(ws: Workspace, events: list[TraceEvent]) -> None:
    ws.trace.unlink(missing_ok=True)
    writer = TraceWriter(ws.trace)
    for event in events:
        writer.write(event)


def test_the_preview_is_the_pick(tmp_path: Path, store: Store, capsys) -> None:
    rng = random.Random(20261201)
    bank = load_bank()
    task = load_task("cpu_softmax")
    ws, _ = init_workspace(store, tmp_path / "ws", "cpu_softmax", False, tmp_path)
    hook_picker = build_deps(ws, store, HookDialect.CLAUDE_CODE).questions
    ids = [e.id for e in bank.entries]
    agree = 0
    for case in range(CASES):
        rewrite(ws, random_trace(rng, ids))
        picker = hook_picker
        ws.campaign_state.unlink(missing_ok=True)
        if case % 2:  # under a campaign: its own seed and settings, in campaign.json and in its picker
            seed = rng.randint(0, 10**6)
            config = MomentsConfig(plateau=PlateauConfig(min_gain_pct=rng.choice([0.5, 30.0, 100.0])))
            persisted = {"seed": seed, "moments": config.model_dump(mode="json")}
            save_state(ws.campaign_state, CampaignState(config=persisted))
            picker = QueuedQuestions(ws, BankSource(bank, seed), context_of(task.spec), config)
        moment = rng.choice(list(Moment))
        view = ask_view(ws, bank, context_of(task.spec), requested=moment, n=3)
        picked = picker.pick(moment, "evidence")
        preview = view.suggestions[0].entry.id if view.suggestions else None
        agree += preview == (None if isinstance(picked, NoQuestion) else picked.entry_id)
    with capsys.disabled():
        print(f"\npreview matches the hook's pick in {agree} of {CASES} cases")
    assert agree == CASES
