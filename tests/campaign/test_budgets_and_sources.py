"""Budgets between sessions (sessions, cost, wall time), errors in a row, and a person as the source."""

from __future__ import annotations

from pathlib import Path

from quaere.agents.base import EndReason, HookSet, SessionLimits, SessionOutcome
from quaere.agents.config import Budgets
from quaere.agents.display import NullDisplay
from quaere.agents.human import terminal_ask
from quaere.agents.scripted import Action, ScriptedAgent
from quaere.agents.state import CampaignStatus, load_state
from quaere.campaign import run_campaign
from quaere.hooks.state import StateFile, read_state
from quaere.questions.bank import load_bank
from quaere.questions.sources import BankSource, Edit, HumanPrompt, HumanSource, OwnText, Pick
from quaere.records import Moment
from quaere.serve.deploy import Deployment
from quaere.store import Store
from quaere.trace import BudgetSpent, ErrorEvent, QuestionAsked, SessionEnd, SessionUnchecked, StopDecision, read_trace
from quaere.workspace import Workspace

from .story import campaign_config


class CostlyAgent:
    """Stops at once (the goal is unmet, so its stop is refused) and reports what each session cost."""

    name = "costly"

    def __init__(self, cost_usd: float, reason: EndReason = EndReason.COMPLETED) -> None:
        self.cost_usd = cost_usd
        self.reason = reason
        self.limits: list[SessionLimits] = []

    def run_session(self, workspace: Path, opening: str, hooks: HookSet, limits: SessionLimits) -> SessionOutcome:
        self.limits.append(limits)
        hooks.on_prompt(opening)
        return SessionOutcome(self.reason, 0, self.cost_usd, detail="boom" if self.reason is EndReason.ERROR else "")


def _events(workspace: Path) -> list:
    return list(read_trace(workspace / ".quaere" / "trace.jsonl").events)


def test_cost_budget_caps_each_session_and_ends_the_campaign(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    config = campaign_config(workspace, "claude").model_copy(update={"budgets": Budgets(sessions=10, cost_usd=1.0)})
    agent = CostlyAgent(cost_usd=0.6)
    result = run_campaign(config, agent)  # type: ignore[arg-type]
    assert result.reason == "cost_usd" and result.sessions == 2 and result.cost_usd == 1.2
    assert [round(lim.cost_usd or 0, 6) for lim in agent.limits] == [1.0, 0.4]  # what is left, per session
    spent = [e for e in _events(workspace) if isinstance(e, BudgetSpent)]
    assert [(e.budget, e.limit, e.used) for e in spent] == [("cost_usd", 1.0, 1.2)]


def test_wall_time_is_summed_over_runs_and_ends_the_campaign(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    ticks = iter(range(0, 10_000, 40))  # every reading of the clock is 40 s later
    config = campaign_config(workspace, "claude").model_copy(update={"budgets": Budgets(sessions=10, wall_min=3)})
    result = run_campaign(config, CostlyAgent(0.0), clock=lambda: float(next(ticks)))  # type: ignore[arg-type]
    assert result.reason == "wall_s" and result.wall_s >= 180 and 1 <= result.sessions < 10
    assert [e.budget for e in _events(workspace) if isinstance(e, BudgetSpent)] == ["wall_s"]


def test_sessions_failing_in_a_row_stop_the_run_resumably(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    config = campaign_config(workspace, "claude").model_copy(update={"budgets": Budgets(sessions=10)})
    result = run_campaign(config, CostlyAgent(0.0, EndReason.ERROR))  # type: ignore[arg-type]
    assert result.reason == "error" and result.sessions == 3  # three failures in a row, not ten
    events = _events(workspace)
    assert [e.message for e in events if isinstance(e, ErrorEvent)] == ["boom"] * 3
    assert [e.reason for e in events if isinstance(e, SessionEnd)] == ["error"] * 3
    assert load_state(workspace / ".quaere" / "campaign.json").status is CampaignStatus.RUNNING


def test_a_person_at_the_terminal_picks_edits_or_writes_the_question(tmp_path: Path) -> None:
    answers = iter(["", "7", "2", "e 1", "Where exactly is the time spent?", "Is the tail loop vectorized?"])
    shown: list[str] = []
    ask = terminal_ask(NullDisplay(), read=lambda _prompt: next(answers), write=shown.append)
    bank = BankSource(load_bank())
    suggestions = tuple(bank.suggest(Moment.PLATEAU, _context(), [], 3))
    prompt = HumanPrompt(moment=Moment.PLATEAU, evidence="6 evaluations without a new best", suggestions=suggestions)
    assert ask(prompt) == Pick(index=2)  # "" and "7" were refused with a hint
    assert any("expected a suggestion number" in line for line in shown)
    assert ask(prompt) == Edit(index=1, text="Where exactly is the time spent?")
    assert ask(prompt) == OwnText(text="Is the tail loop vectorized?")

    workspace = tmp_path / "ws"
    person = HumanSource(lambda p: OwnText(text=f"What does the {p.moment.value} tell you?"), bank)
    stop_once = ScriptedAgent([Action("stop", "I am done.")])
    run_campaign(
        campaign_config(workspace, "scripted").model_copy(update={"budgets": Budgets(sessions=1)}), stop_once, person
    )
    asked = [e for e in _events(workspace) if isinstance(e, QuestionAsked)]
    assert [(e.moment, e.source, e.entry_id) for e in asked] == [
        (Moment.CAMPAIGN_START, "human", None),
        (Moment.CLAIMED_LIMIT, "human", None),
    ]
    assert asked[1].text == "What does the claimed_limit tell you?"


def _context():
    from quaere.questions.sources import TaskContext

    return TaskContext(task="quick_softmax")


def test_a_damaged_hook_state_gives_the_agent_nothing(tmp_path: Path, store: Store) -> None:
    """The agent damages both hooks.json: the workspace's decides nothing, the store's fails its signature
    and starts over (counted), so stops keep being refused within the pinned budget; the session that ends
    without an allowed stop is recorded as such."""
    workspace = tmp_path / "ws"
    signed = store.folder(Workspace(workspace.resolve(), "", "").id) / "hooks.json"
    forged = '{"payload": {"blocks": 999}, "sig": "AAAA"}'
    damage = f"printf '{{broken' > {workspace / '.quaere' / 'hooks.json'} && printf '{forged}' > {signed}"
    agent = ScriptedAgent([Action("bash", damage)] + [Action("stop", "Done.")] * 3)
    config = campaign_config(workspace, "scripted").model_copy(update={"budgets": Budgets(sessions=1)})
    run_campaign(config, agent, deployment=Deployment(store))
    events = _events(workspace)
    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    assert ([(e.decision, e.goal_status) for e in events if isinstance(e, StopDecision)]
            == [("block", "no_evaluation")] * 3)
    state = read_state(StateFile(signed.parent, store.signer()))
    assert (state.blocks, state.tampered_resets) == (3, 1)
    [unchecked] = [e for e in events if isinstance(e, SessionUnchecked)]
    assert unchecked.session == 1 and unchecked.reason.startswith("completed")
    assert agent.position == 4
