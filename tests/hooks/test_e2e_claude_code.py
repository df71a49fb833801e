"""End to end with the real Claude Code CLI (bundled in claude-agent-sdk) against a scripted model.

A workspace of the CPU task with ``quaere hooks install`` done; the scripted model runs ``quaere eval`` on a
broken candidate, claims it is done; ``quaere hook stop`` (run by the CLI from .claude/settings.json)
blocks with the failing scenarios and a question; the test sees both arrive in the model's next request;
the model fixes the kernel and evaluates it for real; its next stop goes through because the goal is met
(after the hook's own confirming evaluation).

The goal is relaxed to 0.25x the initial kernel in a copy of the task, so that the real timing of a correct
kernel on a loaded CI machine meets it every time, margin included (on two shared cores one configuration's
spread reached half of its median), with more samples and a wide clock-bound slack: what is under test is
the loop, not the speed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from quaere.agents.fake_anthropic import RecordedRequest, ScriptedAnthropicServer, Turn
from quaere.questions.queue import enqueue, store_queue
from quaere.questions.sources import ChosenQuestion
from quaere.records import Moment
from quaere.store import Store
from quaere.store.pinning import init_workspace
from quaere.store.records import Starter
from quaere.task.loader import SHIPPED_TASKS_DIR
from quaere.trace import QuestionAsked, StopDecision, read_trace

pytestmark = pytest.mark.slow

BROKEN_KERNEL = """// Forgets to subtract the row maximum: exp overflows on large inputs.
#include <cmath>
extern "C" int softmax_rows(const float* x, float* y, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        const float* in = x + static_cast<long>(r) * cols;
        float* out = y + static_cast<long>(r) * cols;
        float sum = 0.0f;
        for (int c = 0; c < cols; ++c) { out[c] = std::exp(in[c]); sum += out[c]; }
        for (int c = 0; c < cols; ++c) { out[c] /= sum; }
    }
    return 0;
}
"""
HUMAN_QUESTION = "Which rows produce the non-finite values, and what is their largest input?"
DONE = "Fixed the overflow and evaluated it; done."


def fix_story(ws, good: Path, call: Callable, say: Callable, seen: dict) -> list:
    """The scripted model's five turns in any wire format (``call(command, text)`` and ``say(text)`` make a
    turn): evaluate the broken kernel, explain the failure away, claim it is done while a person queues a
    question, fix and evaluate after the block, stop. ``seen`` gets the requests the hooks' words must be in."""
    evaluate = f"{sys.executable} -m quaere eval"

    def explain_away(request: Any) -> Any:
        seen["after_eval"] = request
        return call("ls", "The non-finite outputs are only rounding noise in the reference.")

    def claim_done(request: Any) -> Any:
        seen["after_explanation"] = request
        # A person watching queues a question with `quaere ask` while the agent works.
        queue = store_queue(Store(Path(os.environ["QUAERE_STORE_DIR"])), ws.id)
        enqueue(queue, ChosenQuestion(moment=Moment.CLAIMED_LIMIT, source="human", text=HUMAN_QUESTION))
        return say("The kernel is optimal. Done.")

    def after_block(request: Any) -> Any:
        seen["after_block"] = request
        return call(f"cp {good} {ws.candidate} && {evaluate}", "I will fix the overflow.")

    return [call(evaluate, "Let me evaluate the current kernel."), explain_away, claim_done, after_block, say(DONE)]


def _claude_binary() -> Path | None:
    try:
        import claude_agent_sdk
    except ImportError:
        return None
    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return path if path.exists() else None


def _task_copy(tmp_path: Path, more_samples: bool = True) -> Path:
    """The CPU task with the goal relaxed to 0.25x (see above); ``more_samples``: 25 to 80 timed calls."""
    folder = tmp_path / "cpu_softmax"
    shutil.copytree(SHIPPED_TASKS_DIR / "cpu_softmax", folder, ignore=shutil.ignore_patterns("__pycache__"))
    toml = folder / "task.toml"
    text = re.sub(
        r"targets = \[.*\]", 'targets = [{ baseline = "initial", ratio = 0.25, scenarios = "*" }]', toml.read_text()
    )
    assert "ratio = 0.25" in text
    # A wide clock-bound slack, for the same reason: on a shared 2-core machine other processes preempt the
    # round trips of most calls, and the unchanged kernel's bound was seen 1.9 ms off in a confirmation.
    text = re.sub(r"hidden_work_abs_ms = .*", "hidden_work_abs_ms = 5.0", text)
    assert "hidden_work_abs_ms = 5.0" in text
    if more_samples:
        # More samples than the shipped task takes: the margin is two standard errors of each median, and on a
        # loaded machine a handful of samples leaves too wide an error for any target.
        text = re.sub(r"budget_ms = .*", "budget_ms = 400.0", re.sub(r"min_reps = .*", "min_reps = 25", text))
        text = re.sub(r"max_reps = .*", "max_reps = 80", text)
    toml.write_text(text)
    return folder


def _quaere(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "quaere", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture
def workspace(tmp_path):
    task = _task_copy(tmp_path)
    ws, _ = init_workspace(Store(Path(os.environ["QUAERE_STORE_DIR"])), tmp_path / "ws", str(task), False, tmp_path)
    (tmp_path / "good.cpp").write_text((task / "kernel.cpp").read_text())
    ws.candidate.write_text(BROKEN_KERNEL)
    done = _quaere(
        "hooks", "install", "--agent", "claude-code", "--root", str(ws.root), "--max-blocks", "12", cwd=ws.root
    )
    assert done.returncode == 0, done.stderr
    settings = json.loads((ws.root / ".claude" / "settings.json").read_text())
    assert settings["env"]["CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"] == "12"
    return ws


def _run_claude(binary: Path, server: ScriptedAnthropicServer, ws, home: Path) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        ANTHROPIC_BASE_URL=server.base_url,
        ANTHROPIC_API_KEY="test",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        IS_SANDBOX="1",
        HOME=str(home),
    )
    env.pop("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", None)  # the installed settings must provide it
    command = [
        str(binary),
        "-p",
        "Make the softmax kernel meet the goal.",
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
    ]
    return subprocess.run(command, cwd=ws.root, env=env, capture_output=True, text=True, timeout=420)


@pytest.mark.skipif(_claude_binary() is None, reason="claude-agent-sdk's bundled Claude Code CLI is not installed")
def test_stop_hook_blocks_with_failures_and_question_then_lets_the_met_goal_stop(workspace, tmp_path):
    ws = workspace
    seen: dict[str, RecordedRequest] = {}
    script = fix_story(ws, tmp_path / "good.cpp", lambda c, t: Turn.bash(c, t), Turn.text, seen)
    with ScriptedAnthropicServer(script) as server:
        run = _run_claude(_claude_binary(), server, ws, tmp_path / "home")
        requests = server.agent_requests
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(requests) == 5, f"expected 5 model turns, got {len(requests)}\n{run.stdout[-3000:]}"

    events = read_trace(ws.trace).events
    questions = [e for e in events if isinstance(e, QuestionAsked)]
    start = next(q for q in questions if q.moment is Moment.CAMPAIGN_START)
    assert start.source == "bank" and start.text in requests[0].text()  # the prompt hook's question

    # The post-tool hook read the model's words from the transcript and asked about the explained failure.
    explained = next(q for q in questions if q.moment is Moment.EXPLAINED_FAILURE)
    assert explained.text in seen["after_explanation"].text() and explained.text not in requests[1].text()

    decisions = [e for e in events if isinstance(e, StopDecision)]
    assert [(d.decision, d.goal_status) for d in decisions] == [("block", "unmet"), ("allow", "met")]

    feedback = seen["after_block"].last_user_text()
    assert "Stop hook feedback" in feedback
    assert "nonfinite" in feedback and "r9-c100-s1-o100" in feedback  # a failing scenario, by id and verdict
    assert f"Question: {HUMAN_QUESTION}" in feedback  # the queued question goes first
    stop_question = next(q for q in questions if q.moment is Moment.CLAIMED_LIMIT)
    assert stop_question.source == "queue"

    entries = Store(Path(os.environ["QUAERE_STORE_DIR"])).read(ws.id).entries
    # the agent's two evaluations, then quaere's own confirmation run by the Stop hook before allowing
    assert [(e.evaluation.correct, e.started_by) for e in entries] == [
        (False, Starter.CALLER), (True, Starter.CALLER), (True, Starter.CONFIRMATION)
    ]
    result = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")][-1]
    assert result["type"] == "result" and result["result"] == DONE


@pytest.mark.skipif(_claude_binary() is None, reason="claude-agent-sdk's bundled Claude Code CLI is not installed")
def test_installed_block_cap_lets_quaere_budget_decide_past_eight_blocks(workspace, tmp_path):
    """Claude Code alone ends a turn after 8 consecutive blocks; the installed env raises it to the budget
    (12 here), so the 12 blocks happen and quaere's own budget lets the 13th stop through."""
    ws = workspace
    attempts = iter(range(1, 100))

    def claim(request: RecordedRequest) -> Turn:
        # A different sentence each time: Claude Code ends the turn itself when the model repeats itself.
        return Turn.text(f"I am done (attempt {next(attempts)}).")

    with ScriptedAnthropicServer([], fallback=claim) as server:
        run = _run_claude(_claude_binary(), server, ws, tmp_path / "home")
        turns = len(server.agent_requests)
    assert run.returncode == 0, run.stderr[-2000:]
    decisions = [e for e in read_trace(ws.trace).events if isinstance(e, StopDecision)]
    assert [d.decision for d in decisions] == ["block"] * 12 + ["allow"]
    assert decisions[-1].goal_status == "budget_spent"
    assert turns == 13
