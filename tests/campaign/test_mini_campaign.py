"""A whole campaign with the ``mini`` backend: mini-swe-agent from PyPI (in its own environment, found as
below) with quaere's hooks in-process, talking through litellm to a scripted chat-completions server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from quaere.agents.fake_openai import Reply, ScriptedOpenAIServer, last_user_text
from quaere.campaign import CampaignEnd, CampaignResult
from quaere.records import Moment
from quaere.trace import QuestionAsked, read_trace

from .story import assert_story_told
from .test_openai_campaign import replies as openai_replies

DEFAULT_VENV = Path.home() / ".cache" / "quaere" / "mini-venv" / "bin" / "python"
MINI_PYTHON = Path(os.environ.get("QUAERE_MINI_PYTHON") or DEFAULT_VENV)
SRC = Path(__import__("quaere").__file__).parents[1]
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # how mini-swe-agent asks to finish

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not MINI_PYTHON.exists(),
        reason=f"no mini-swe-agent environment at {MINI_PYTHON} (a venv with --system-site-packages and "
        "mini-swe-agent; scripts/setup.sh makes one; or set QUAERE_MINI_PYTHON)",
    ),
]


def replies() -> list[Reply]:
    """The story as the openai backend's replies, each stop made mini-swe-agent's submit command."""
    return [r if r.tool_calls else Reply.bash(SUBMIT, content=r.content) for r in openai_replies()]


def test_mini_campaign_reaches_the_goal_through_all_five_moments(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    env = dict(os.environ, PYTHONPATH=str(SRC), HOME=str(tmp_path / "home"), LITELLM_LOCAL_MODEL_COST_MAP="True")
    with ScriptedOpenAIServer(replies()) as server:
        command = [str(MINI_PYTHON), str(Path(__file__).with_name("mini_driver.py")), str(workspace), server.base_url]
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=420)
        requests = server.requests
    assert run.returncode == 0, run.stderr[-3000:]
    data = json.loads(run.stdout.strip().splitlines()[-1])
    result = CampaignResult(**{**data, "reason": CampaignEnd(data["reason"]), "workspace": Path(data["workspace"])})

    trace = assert_story_told(workspace, result)
    assert "Question:" in last_user_text(requests[0])  # the campaign-start question after the task
    after_blame = requests[3]["messages"]  # the reply to the evaluation that followed the blame
    assert [m["role"] for m in after_blame[-2:]] == ["tool", "user"]
    assert last_user_text(requests[3]).startswith("Question:")
    refused = requests[5]["messages"][-1]  # the submit command's result: the Stop hook's refusal
    assert refused["role"] == "tool" and "goal: UNMET" in refused["content"] and "Question:" in refused["content"]
    assert "test-mini-key-0123" not in trace.read_text()
    # every question asked, at each of the five moments, reached the model
    sent = "\n".join(last_user_text({"messages": [m]}) for r in requests for m in r["messages"])
    asked = [e for e in read_trace(trace).events if isinstance(e, QuestionAsked)]
    assert {q.moment for q in asked} == set(Moment) and all(q.text in sent for q in asked)


def test_quaere_run_agent_mini_refuses_the_unmet_stop_then_the_block_budget_lets_it_go(tmp_path: Path) -> None:
    from quaere.trace import StopDecision

    from .story import TASK

    env = dict(os.environ, PYTHONPATH=str(SRC), HOME=str(tmp_path / "home"), LITELLM_LOCAL_MODEL_COST_MAP="True")
    env["OPENAI_API_KEY"] = "test"  # litellm reads the provider's key itself
    script = [Reply.bash(SUBMIT, content="Done."), Reply.bash(SUBMIT, content="Done, I insist.")]
    with ScriptedOpenAIServer(script) as server:
        command = [str(MINI_PYTHON), "-m", "quaere", "run", "--task", str(TASK), "--agent", "mini", "--no-live"]
        command += ["--model", "openai/fake-model", "--base-url", server.base_url, "--workspace", "ws"]
        command += ["--sessions", "1", "--max-blocks", "1"]
        run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        requests = server.requests
    assert run.returncode == 0, run.stderr[-3000:]
    assert "campaign ended: blocks after 1 sessions" in run.stdout
    events = read_trace(tmp_path / "ws" / ".quaere" / "trace.jsonl").events
    decisions = [e for e in events if isinstance(e, StopDecision)]
    assert [(d.decision, d.goal_status) for d in decisions] == [("block", "no_evaluation"), ("allow", "budget_spent")]
    assert len(requests) == 2 and "Question:" in last_user_text(requests[1])
