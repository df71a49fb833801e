"""The backends' own behaviour, each against a real local process or server, without a campaign."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from quaere.agents.base import EndReason, SessionLimits, StopAnswer, ToolAnswer
from quaere.agents.bash_tool import run_bash
from quaere.agents.config import OpenAISettings
from quaere.agents.fake_openai import Reply, ScriptedOpenAIServer, last_user_text
from quaere.agents.openai_loop import OpenAIAgent
from quaere.agents.scripted import ScriptedAgent, ScriptError, load_script, parse_actions
from quaere.trace import Event


class RecordingHooks:
    """A hook set that blocks the first stop, asks a question after every tool call, and keeps the events."""

    def __init__(self, halt_after: int | None = None) -> None:
        self.events: list[Event] = []
        self.stops: list[str] = []
        self.tools: list[tuple[str, dict[str, Any], str]] = []
        self.halt_after = halt_after

    def record(self, event: Event) -> None:
        self.events.append(event)

    def on_prompt(self, prompt: str) -> str:
        return "Question: where does the time go?"

    def after_tool(self, tool: str, tool_input: dict[str, Any], output: str) -> ToolAnswer:
        self.tools.append((tool, tool_input, output))
        if self.halt_after is not None and len(self.tools) >= self.halt_after:
            return ToolAnswer(halt=True, halt_reason="tool_calls budget spent")
        return ToolAnswer(context=f"Question: what did call {len(self.tools)} show?")

    def on_stop(self, last_message: str) -> StopAnswer:
        self.stops.append(last_message)
        return StopAnswer(allow=len(self.stops) > 1, reason="goal: UNMET, keep going", goal_met=len(self.stops) > 1)


@pytest.mark.parametrize("stream", [False, True])
def test_openai_loop_runs_bash_and_routes_hooks(tmp_path: Path, stream: bool) -> None:
    script = [
        Reply.bash("echo hello > out.txt; cat out.txt; exit 3", content="Writing a file."),
        Reply(tool_calls=(("python", {"code": "1"}),)),
        Reply.text("I am done."),
        Reply.text("Done, really."),
    ]
    with ScriptedOpenAIServer(script) as server:
        agent = OpenAIAgent(OpenAISettings(base_url=server.base_url, model="m", stream=stream))
        hooks = RecordingHooks()
        outcome = agent.run_session(tmp_path, "Optimize the kernel.", hooks, SessionLimits())
        requests = server.requests

    assert outcome.reason is EndReason.GOAL_MET and outcome.tool_calls == 2
    assert (tmp_path / "out.txt").read_text() == "hello\n"
    assert [e.type for e in hooks.events] == [
        "message",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "message",
        "message",
    ]
    assert hooks.events[2].output == "hello\n" and hooks.events[2].is_error  # exit 3
    assert hooks.events[4].is_error and "the only tool is bash" in hooks.events[4].output
    assert hooks.stops == ["I am done.", "Done, really."]
    assert requests[0]["messages"][1]["content"] == "Optimize the kernel.\n\nQuestion: where does the time go?"
    second = requests[1]["messages"]
    assert second[-2] == {
        "role": "tool",
        "tool_call_id": second[-3]["tool_calls"][0]["id"],
        "content": "hello\n[exit 3]",
    }
    assert second[-1] == {"role": "user", "content": "Question: what did call 1 show?"}
    assert last_user_text(requests[3]) == "goal: UNMET, keep going"
    assert all(r.get("stream", False) is stream for r in requests)


def test_openai_loop_halts_on_a_spent_budget_and_reports_api_errors(tmp_path: Path) -> None:
    with ScriptedOpenAIServer([Reply.bash("true"), Reply.bash("true")]) as server:
        agent = OpenAIAgent(OpenAISettings(base_url=server.base_url, model="m"))
        outcome = agent.run_session(tmp_path, "go", RecordingHooks(halt_after=1), SessionLimits())
    assert outcome.reason is EndReason.BUDGET and outcome.tool_calls == 1 and "budget" in outcome.detail

    secret = "sk-unreachable-secret-0123456789"
    settings = OpenAISettings(base_url="http://127.0.0.1:9/v1", model="m", api_key=SecretStr(secret))
    outcome = OpenAIAgent(settings, (secret,)).run_session(tmp_path, "go", RecordingHooks(), SessionLimits())
    assert outcome.reason is EndReason.ERROR and "Connection" in outcome.detail and secret not in outcome.detail


def test_bash_tool_kills_a_command_that_outlives_its_limit(tmp_path: Path) -> None:
    result = run_bash("echo started; sleep 30 & wait", tmp_path, timeout_s=1.0)
    assert result.timed_out and result.exit_code == 124 and result.output.startswith("started")
    text = run_bash("python3 -c \"print('x' * 5000)\"", tmp_path, 10).for_model(300)
    assert len(text) < 400 and "characters cut" in text and text.endswith("[exit 0]")


def test_scripted_agent_replays_across_sessions_and_validates_its_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps([{"say": "hi"}, {"bash": "echo one"}, {"stop": "done?"}, {"stop": "done!"}, {"bash": "echo two"}])
    )
    agent = ScriptedAgent(load_script(script))
    first, hooks = agent.run_session(tmp_path, "go", RecordingHooks(), SessionLimits()), None
    assert first.reason is EndReason.GOAL_MET and first.tool_calls == 1
    hooks = RecordingHooks()
    second = agent.run_session(tmp_path, "again", hooks, SessionLimits())
    assert second.reason is EndReason.COMPLETED and second.detail == "script exhausted"
    assert hooks.tools == [("bash", {"command": "echo two"}, "two\n")]

    with pytest.raises(ScriptError, match="action 1: expected say, bash or stop"):
        parse_actions([{"say": "ok"}, {"run": "ls"}], "s.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ScriptError, match="bad.json: not valid JSON"):
        load_script(bad)
