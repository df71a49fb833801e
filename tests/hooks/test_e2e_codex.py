"""End to end with the real Codex CLI (``@openai/codex`` from npm) against a scripted Responses API server
(``ScriptedOpenAIServer``'s ``/v1/responses`` route).

A workspace of the CPU task with ``quaere hooks install --agent codex`` done; Codex runs with the trust
flags that install prints (``--trust --dangerously-bypass-hook-trust``). The scripted model evaluates a
broken kernel, explains the failure away (``quaere hook post-tool`` reads Codex's rollout transcript and
asks about it), claims it is done; ``quaere hook stop`` blocks with the failing scenarios and a question,
which reach the model's next request; the model fixes the kernel, and its next stop goes through because
the goal is met (after the hook's own confirming evaluation). A second run without the trust flags shows
why install prints them: Codex runs no hook.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from quaere.agents.fake_openai import Reply, ScriptedOpenAIServer
from quaere.agents.fake_responses import input_texts, last_user_text
from quaere.records import Moment
from quaere.store import Store
from quaere.store.pinning import init_workspace
from quaere.store.records import Starter
from quaere.trace import QuestionAsked, StopDecision, read_trace

from .test_e2e_claude_code import BROKEN_KERNEL, DONE, HUMAN_QUESTION, _quaere, _task_copy, fix_story

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("codex") is None,
        reason="the Codex CLI is not installed (npm install -g @openai/codex; scripts/setup.sh does it)",
    ),
]
TRUST = ("--trust", "--dangerously-bypass-hook-trust")


@pytest.fixture
def workspace(tmp_path):
    # The shipped task's sample counts: Codex's exec_command hands a command back to the model after 30 s at
    # most, and with 25 to 80 timed calls an evaluation took 48 s on a loaded 2-core machine (the model then
    # sees no result and the story falls apart). The relaxed 0.25x target still clears its margin by far
    # (the initial kernel against itself: lower bounds of 0.69x and more under a load of 8).
    task = _task_copy(tmp_path, more_samples=False)
    ws, _ = init_workspace(Store(Path(os.environ["QUAERE_STORE_DIR"])), tmp_path / "ws", str(task), False, tmp_path)
    (tmp_path / "good.cpp").write_text((task / "kernel.cpp").read_text())
    ws.candidate.write_text(BROKEN_KERNEL)
    done = _quaere("hooks", "install", "--agent", "codex", "--root", str(ws.root), cwd=ws.root)
    assert done.returncode == 0, done.stderr
    assert "--dangerously-bypass-hook-trust" in done.stdout and "codex --trust" in done.stdout
    assert "hooks = true" in (ws.root / ".codex" / "config.toml").read_text()
    return ws


def _run_codex(server: ScriptedOpenAIServer, ws, home: Path, flags: tuple[str, ...]) -> subprocess.CompletedProcess:
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HOME=str(home), CODEX_HOME=str(home / ".codex"), OPENAI_API_KEY="test")
    provider = {
        "name": '"scripted"',
        "base_url": f'"{server.base_url}"',
        "wire_api": '"responses"',
        "env_key": '"OPENAI_API_KEY"',
        "request_max_retries": "0",
        "stream_max_retries": "0",
    }
    config = ["-c", "model_provider=scripted"]
    for key, value in provider.items():
        config += ["-c", f"model_providers.scripted.{key}={value}"]
    command = ["codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", *flags, *config]
    command += ["-m", "fake-model", "--json", "Make the softmax kernel meet the goal."]
    return subprocess.run(
        command, cwd=ws.root, env=env, capture_output=True, text=True, timeout=420, stdin=subprocess.DEVNULL
    )


def _exec(command: str, text: str) -> Reply:
    # exec_command returns after yield_time_ms (10 s unless asked, 30 s at most) even if the command runs
    # on; a loaded machine can take longer than 10 s to evaluate, and the story needs the result.
    return Reply.call("exec_command", {"cmd": command, "yield_time_ms": 30000}, text)


def test_codex_stop_blocks_with_failures_and_question_then_lets_the_met_goal_stop(workspace, tmp_path):
    ws = workspace
    seen: dict[str, dict] = {}
    script = fix_story(ws, tmp_path / "good.cpp", _exec, Reply.text, seen)
    with ScriptedOpenAIServer(script) as server:
        run = _run_codex(server, ws, tmp_path / "home", TRUST)
        requests = server.requests
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(requests) == 5, f"expected 5 model turns, got {len(requests)}\n{run.stdout[-3000:]}"

    events = read_trace(ws.trace).events
    questions = [e for e in events if isinstance(e, QuestionAsked)]
    start = next(q for q in questions if q.moment is Moment.CAMPAIGN_START)
    assert start.text in "\n".join(input_texts(requests[0]))  # the prompt hook's question

    # The post-tool hook read the model's words from Codex's rollout and asked about the explained failure.
    explained = next(q for q in questions if q.moment is Moment.EXPLAINED_FAILURE)
    assert explained.text in "\n".join(input_texts(seen["after_explanation"]))
    assert explained.text not in "\n".join(input_texts(seen["after_eval"]))

    decisions = [e for e in events if isinstance(e, StopDecision)]
    assert [(d.decision, d.goal_status) for d in decisions] == [("block", "unmet"), ("allow", "met")]
    feedback = last_user_text(seen["after_block"])
    assert feedback.startswith("<hook_prompt")  # Codex's wrapper of a Stop hook's reason
    assert "nonfinite" in feedback and "r9-c100-s1-o100" in feedback  # a failing scenario, by id and verdict
    assert f"Question: {HUMAN_QUESTION}" in feedback

    sent = "\n".join(text for r in requests for text in input_texts(r))
    assert all(q.text in sent for q in questions)  # every question asked reached the model
    entries = Store(Path(os.environ["QUAERE_STORE_DIR"])).read(ws.id).entries
    # the agent's two evaluations, then quaere's own confirmation run by the Stop hook before allowing
    assert [(e.evaluation.correct, e.started_by) for e in entries] == [
        (False, Starter.CALLER), (True, Starter.CALLER), (True, Starter.CONFIRMATION)
    ]
    messages = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    said = [m["item"]["text"] for m in messages if m.get("item", {}).get("type") == "agent_message"]
    assert said[-1] == DONE


def test_codex_runs_no_hook_without_the_trust_step(workspace, tmp_path):
    with ScriptedOpenAIServer([Reply.text("Done.")]) as server:
        run = _run_codex(server, workspace, tmp_path / "home", ())
        requests = server.requests
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(requests) == 1  # the stop went through: no hook blocked it
    assert not [e for e in read_trace(workspace.trace).events if isinstance(e, StopDecision)]
