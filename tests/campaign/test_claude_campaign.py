"""A whole campaign with the ``claude`` backend: the real Claude Code CLI bundled with claude-agent-sdk,
driven through the SDK with quaere's hooks in-process, talking to a scripted Anthropic server on 127.0.0.1."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import SecretStr

from quaere.agents.claude import ClaudeAgent
from quaere.agents.config import ClaudeSettings
from quaere.agents.fake_anthropic import ScriptedAnthropicServer, Turn
from quaere.campaign import run_campaign
from quaere.records import Moment
from quaere.trace import QuestionAsked, read_trace

from .story import assert_story_told, campaign_config, story


def _bundled_cli() -> Path | None:
    try:
        import claude_agent_sdk
    except ImportError:
        return None
    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return path if path.exists() else (Path(found) if (found := shutil.which("claude")) else None)


def turns() -> list[Turn]:
    """The story as assistant turns of Claude Code's Bash tool; a 'say' step is the text of the next turn."""
    out: list[Turn] = []
    said = ""
    for step in story():
        if step.kind == "say":
            said = step.text
        elif step.kind == "bash":
            out.append(Turn.bash(step.text, text=said))
            said = ""
        else:
            out.append(Turn.text(step.text))
    return out


@pytest.mark.skipif(_bundled_cli() is None, reason="the Claude Code CLI bundled with claude-agent-sdk is missing")
def test_claude_campaign_reaches_the_goal_through_all_five_moments(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    home = tmp_path / "home"
    home.mkdir()
    # A scratch HOME keeps the CLI's own files out of the user's; IS_SANDBOX lets bypassPermissions run as root.
    env = {"HOME": str(home), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "IS_SANDBOX": "1"}
    with ScriptedAnthropicServer(turns()) as server:
        settings = ClaudeSettings(base_url=server.base_url, api_key=SecretStr("test"), model="claude-fake-1")
        config = campaign_config(workspace, "claude", claude=settings)
        result = run_campaign(config, ClaudeAgent(settings, config.secret_values(), extra_env=env))
        requests = server.agent_requests

    trace = assert_story_told(workspace, result)
    assert result.cost_usd > 0  # Claude Code reports a cost from the usage the server returned
    # the hooks' words reached the model in the request right after the event that raised them
    texts = [r.text() for r in requests]
    question = next(
        e.text
        for e in read_trace(trace).events
        if isinstance(e, QuestionAsked) and e.moment is Moment.EXPLAINED_FAILURE
    )
    assert question not in texts[2] and question in texts[3]  # after the evaluation that followed the blame
    assert "goal: UNMET" not in texts[4] and "goal: UNMET" in texts[5]  # after the refused stop
