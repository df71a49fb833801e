"""``quaere hooks install --scope user`` with the real Claude Code and Codex CLIs: the settings live in the
(scratch) home folder, nothing is written in the workspace the agent could edit, and the agent's stop is
still refused while the goal is unmet (then let through by the block budget of 1).

Codex runs user-level hooks without the project trust step (only the hooks need trusting).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from quaere.agents.fake_anthropic import RecordedRequest, ScriptedAnthropicServer, Turn
from quaere.agents.fake_openai import Reply, ScriptedOpenAIServer
from quaere.store import Store
from quaere.store.pinning import init_workspace
from quaere.trace import StopDecision, read_trace

from .test_e2e_claude_code import _claude_binary, _run_claude, _task_copy
from .test_e2e_codex import _run_codex

pytestmark = pytest.mark.slow
EXPECTED = [("block", "no_evaluation"), ("allow", "budget_spent")]


@pytest.fixture
def workspace(tmp_path):
    task = _task_copy(tmp_path)
    ws, _ = init_workspace(Store(Path(os.environ["QUAERE_STORE_DIR"])), tmp_path / "ws", str(task), False, tmp_path)
    return ws


def _install_for_user(ws, dialect: str, home: Path) -> None:
    env = dict(os.environ, HOME=str(home), CODEX_HOME=str(home / ".codex"))
    command = [sys.executable, "-m", "quaere", "hooks", "install", "--agent", dialect, "--scope", "user"]
    command += ["--root", str(ws.root), "--max-blocks", "1"]
    done = subprocess.run(command, cwd=ws.root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"installed in {home}" in done.stdout
    assert sorted(p.name for p in ws.root.iterdir() if p.name.startswith(".")) == [".quaere"]


def _decisions(ws) -> list[tuple[str, str]]:
    return [(e.decision, e.goal_status) for e in read_trace(ws.trace).events if isinstance(e, StopDecision)]


@pytest.mark.skipif(_claude_binary() is None, reason="claude-agent-sdk's bundled Claude Code CLI is not installed")
def test_claude_code_obeys_user_level_hooks(workspace, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    _install_for_user(workspace, "claude-code", home)
    attempts = iter(range(1, 100))

    def claim(request: RecordedRequest) -> Turn:
        return Turn.text(f"Done (attempt {next(attempts)}).")

    with ScriptedAnthropicServer([], fallback=claim) as server:
        run = _run_claude(_claude_binary(), server, workspace, home)
        turns = len(server.agent_requests)
    assert run.returncode == 0, run.stderr[-2000:]
    assert _decisions(workspace) == EXPECTED and turns == 2


@pytest.mark.skipif(shutil.which("codex") is None, reason="the Codex CLI is not installed (npm i -g @openai/codex)")
def test_codex_obeys_user_level_hooks_without_project_trust(workspace, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    _install_for_user(workspace, "codex", home)
    with ScriptedOpenAIServer([], fallback=Reply.text("Done.")) as server:
        run = _run_codex(server, workspace, home, ("--dangerously-bypass-hook-trust",))
        turns = len(server.requests)
    assert run.returncode == 0, run.stderr[-2000:]
    assert _decisions(workspace) == EXPECTED and turns == 2
