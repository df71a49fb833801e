"""A whole campaign with the scripted agent on the quick CPU task: the loop, the hooks, the trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quaere.agents.display import NullDisplay
from quaere.agents.scripted import Action, ScriptedAgent
from quaere.agents.state import CampaignStatus, load_state
from quaere.campaign import run_campaign
from quaere.trace import read_trace

from .story import assert_story_told, campaign_config, story


def _actions() -> list[Action]:
    return [Action(step.kind, step.text) for step in story()]  # type: ignore[arg-type]


def test_scripted_campaign_reaches_the_goal_through_all_five_moments(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    display = NullDisplay()
    result = run_campaign(campaign_config(workspace, "scripted"), ScriptedAgent(_actions()), display=display)

    assert_story_told(workspace, result)
    state = load_state(workspace / ".quaere" / "campaign.json")
    assert state.status is CampaignStatus.FINISHED and state.finished_reason == "goal_met"
    assert state.tool_calls == 5 and not state.session_open
    assert display.views[-1].best_by_group and display.views[-1].last_question


def test_a_tool_call_budget_ends_the_campaign_cleanly(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    config = campaign_config(workspace, "scripted")
    config = config.model_copy(update={"budgets": config.budgets.model_copy(update={"tool_calls": 2})})
    result = run_campaign(config, ScriptedAgent(_actions()))

    assert result.reason == "tool_calls" and result.tool_calls == 2
    events = read_trace(workspace / ".quaere" / "trace.jsonl").events
    budgets = [e for e in events if e.type == "budget"]
    assert len(budgets) == 1 and budgets[0].budget == "tool_calls" and budgets[0].used == 2
    assert [e.reason for e in events if e.type == "session_end"] == ["budget"]


def test_starting_over_an_existing_campaign_is_refused(tmp_path: Path) -> None:
    from quaere.agents.state import StateError

    workspace = tmp_path / "ws"
    config = campaign_config(workspace, "scripted")
    config = config.model_copy(update={"budgets": config.budgets.model_copy(update={"tool_calls": 1})})
    run_campaign(config, ScriptedAgent(_actions()))
    with pytest.raises(StateError, match="--resume"):
        run_campaign(config, ScriptedAgent(_actions()))
    saved = json.loads((workspace / ".quaere" / "campaign.json").read_text())
    assert "api_key" not in json.dumps(saved)


def test_an_existing_workspace_of_another_task_is_refused(tmp_path: Path) -> None:
    from quaere.agents.state import StateError
    from quaere.task import load_task
    from quaere.workspace import create_workspace

    other = load_task("cpu_softmax")
    create_workspace(tmp_path / "ws", "cpu_softmax", other.initial_kernel)
    with pytest.raises(StateError, match="a workspace of task 'cpu_softmax'"):
        run_campaign(campaign_config(tmp_path / "ws", "scripted"), ScriptedAgent(_actions()))
