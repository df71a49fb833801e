"""A whole campaign with the ``openai`` backend against a scripted chat-completions server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from quaere.agents.config import OpenAISettings
from quaere.agents.fake_openai import Reply, ScriptedOpenAIServer, last_user_text
from quaere.agents.openai_loop import OpenAIAgent
from quaere.campaign import run_campaign

from .story import assert_story_told, campaign_config, story

SECRET = "sk-campaign-test-secret-0123456789"


def replies() -> list[Reply]:
    """The story as chat replies: a 'say' step is the text that comes with the next command."""
    out: list[Reply] = []
    said = None
    for step in story():
        if step.kind == "say":
            said = step.text
        elif step.kind == "bash":
            out.append(Reply.bash(step.text, content=said))
            said = None
        else:
            out.append(Reply.text(step.text))
    return out


def test_openai_campaign_reaches_the_goal_through_all_five_moments(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    with ScriptedOpenAIServer(replies()) as server:
        settings = OpenAISettings(base_url=server.base_url, model="fake-coder", api_key=SecretStr(SECRET))
        config = campaign_config(workspace, "openai", openai=settings)
        result = run_campaign(config, OpenAIAgent(settings, config.secret_values()))
        requests = server.requests

    trace = assert_story_told(workspace, result)
    # what the model was sent: the campaign-start question with the opening, a moment's question after the
    # tool result that raised it, the Stop hook's reason (failing scenarios and a question) after the block
    assert all(r["model"] == "fake-coder" and r["tools"][0]["function"]["name"] == "bash" for r in requests)
    assert "Question:" in requests[0]["messages"][1]["content"]
    after_blame = requests[3]["messages"]  # the reply to the evaluation that followed the blame
    assert after_blame[-2]["role"] == "tool" and after_blame[-1]["role"] == "user"
    assert after_blame[-1]["content"].startswith("Question:")
    after_block = last_user_text(requests[5])  # the reply to the refused stop
    assert "goal: UNMET" in after_block and "Question:" in after_block
    assert SECRET not in trace.read_text()
