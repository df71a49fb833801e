"""``quaere run`` with agents that cannot start, and Claude Code's own block cap, against the real programs.

A start-up failure (Claude Code refusing to run as root, an endpoint that is not there) ends the run with
a non-zero exit and the cause in one line on the terminal and in the trace. The Claude backend hands the
campaign's block budget to the CLI as ``CLAUDE_CODE_STOP_HOOK_BLOCK_CAP``: without it the CLI ends the
turn after 8 blocks in a row, letting the agent stop with the goal unmet before quaere's budget decides.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from quaere.agents.claude import ClaudeAgent
from quaere.agents.config import Budgets, ClaudeSettings
from quaere.agents.fake_anthropic import RecordedRequest, ScriptedAnthropicServer, Turn
from quaere.campaign import run_campaign
from quaere.trace import BudgetSpent, ErrorEvent, StopDecision, read_trace

from .story import TASK, campaign_config
from .test_claude_campaign import _bundled_cli

pytestmark = pytest.mark.slow


def _run(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "quaere", "run", "--task", str(TASK), "--no-live", "--sessions", "1", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _failure(stderr: str) -> list[str]:
    """The terminal's lines after the trust mode that every ``quaere run`` states first."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines[0].startswith("trust mode: same-user"), stderr
    return lines[1:]


def _env(home: Path, **extra: str) -> dict[str, str]:
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("IS_SANDBOX", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")}
    return env | {"HOME": str(home), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"} | extra


@pytest.mark.skipif(_bundled_cli() is None, reason="the Claude Code CLI bundled with claude-agent-sdk is missing")
@pytest.mark.skipif(os.geteuid() != 0, reason="Claude Code's refusal to skip permissions is only shown to root")
def test_claude_refusing_root_ends_the_run_with_its_reason_on_the_terminal(tmp_path: Path) -> None:
    with ScriptedAnthropicServer([]) as server:
        env = _env(tmp_path / "home", ANTHROPIC_API_KEY="test")
        run = _run("--agent", "claude", "--base-url", server.base_url, "--workspace", "ws", cwd=tmp_path, env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    lines = _failure(run.stderr)
    assert lines[0].startswith("quaere run: the agent failed: --dangerously-skip-permissions cannot be used with root")
    assert "IS_SANDBOX=1" in lines[0] and "non-root user" in lines[0]
    assert "Fatal error in message reader" not in run.stderr
    assert "campaign ended: error" in run.stdout
    errors = [e for e in read_trace(tmp_path / "ws" / ".quaere" / "trace.jsonl").events if isinstance(e, ErrorEvent)]
    assert errors and "cannot be used with root" in errors[0].message


@pytest.mark.skipif(_bundled_cli() is None, reason="the Claude Code CLI bundled with claude-agent-sdk is missing")
def test_claude_with_a_rejected_key_ends_the_run_with_the_cli_reason(tmp_path: Path) -> None:
    rejected = (401, "authentication_error", "invalid x-api-key")
    with ScriptedAnthropicServer([], reject=rejected) as server:
        # The CLI retries a rejected key for about 3 minutes before it gives up; the test needs no retry.
        key = "sk-ant-wrong-0123456789"
        env = _env(tmp_path / "home", ANTHROPIC_API_KEY=key, IS_SANDBOX="1", CLAUDE_CODE_MAX_RETRIES="0")
        run = _run("--agent", "claude", "--base-url", server.base_url, "--workspace", "ws", cwd=tmp_path, env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    [line] = _failure(run.stderr)
    assert line.startswith("quaere run: the agent failed: Invalid API key") and "authentication_failed" in line
    assert "campaign ended: error after 1 sessions" in run.stdout


def test_openai_endpoint_not_there_ends_the_run_with_its_reason(tmp_path: Path) -> None:
    env = _env(tmp_path / "home", OPENAI_API_KEY="test")
    url = "http://127.0.0.1:9/v1"  # the discard port: nothing listens
    run = _run("--agent", "openai", "--base-url", url, "--model", "m", "--workspace", "ws", cwd=tmp_path, env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    [line] = _failure(run.stderr)
    assert line.startswith(f"quaere run: the agent failed: APIConnectionError at {url}: Connection error")
    assert "campaign ended: error after 1 sessions" in run.stdout


@pytest.mark.skipif(_bundled_cli() is None, reason="the Claude Code CLI bundled with claude-agent-sdk is missing")
def test_claude_backend_lets_quaere_budget_decide_past_eight_blocks(tmp_path: Path) -> None:
    attempts = iter(range(1, 100))

    def claim(request: RecordedRequest) -> Turn:
        # A different sentence each time: the CLI ends the turn itself when the model repeats itself.
        return Turn.text(f"I am done (attempt {next(attempts)}).")

    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "IS_SANDBOX": "1"}
    with ScriptedAnthropicServer([], fallback=claim) as server:
        settings = ClaudeSettings(base_url=server.base_url, api_key=SecretStr("test"), model="claude-fake-1")
        config = campaign_config(tmp_path / "ws", "claude", claude=settings)
        config = config.model_copy(update={"budgets": Budgets(sessions=1, max_blocks=10)})
        agent = ClaudeAgent(settings, config.secret_values(), extra_env=env, max_blocks=config.budgets.max_blocks)
        result = run_campaign(config, agent)
        turns = len(server.agent_requests)
    events = read_trace(tmp_path / "ws" / ".quaere" / "trace.jsonl").events
    decisions = [e for e in events if isinstance(e, StopDecision)]
    assert [d.decision for d in decisions] == ["block"] * 10 + ["allow"]
    assert decisions[-1].goal_status == "budget_spent"
    assert any(isinstance(e, BudgetSpent) and e.budget == "blocks" for e in events)
    assert turns == 11 and result.reason in ("blocks", "sessions")
