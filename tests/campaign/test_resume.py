"""Interrupted campaigns carry on: a ``quaere run`` killed with SIGKILL mid-session, or stopped with Ctrl-C,
resumes with ``--resume`` and finishes; the trace written before is a byte-for-byte prefix of the trace after."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from quaere.agents.fake_openai import Reply, ScriptedOpenAIServer
from quaere.agents.state import CampaignStatus, load_state
from quaere.records import MethodKind
from quaere.trace import MethodStarted, SessionEnd, SessionStart, ToolCall, TrustModeEvent, read_trace

from .story import DONE, EVAL, KERNELS, TASK

SECRET = "sk-resume-test-secret-0123456789"
SLOW = "sleep 15"
FAST_EVAL = f"cp {KERNELS / 'fast.cpp'} kernel.cpp && {EVAL}"


def _quaere(*args: str) -> list[str]:
    return [sys.executable, "-m", "quaere", "run", *args, "--no-live"]


def _start(workspace: Path, base_url: str, env: dict[str, str]) -> subprocess.Popen:
    """``quaere run`` with the openai backend in its own process group."""
    args = ["--task", str(TASK), "--agent", "openai", "--base-url", base_url, "--model", "fake-coder",
            "--workspace", str(workspace), "--sessions", "3", "--max-tool-calls", "20"]  # fmt: skip
    # SIGINT back to its default in the child: a test run started in the background by a shell without job control
    # inherits it ignored, and Python then installs no handler, so Ctrl-C would be lost (a CI launched that way).
    return subprocess.Popen(_quaere(*args), env=env, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL))  # fmt: skip


def _resume(workspace: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = _quaere("--resume", "--workspace", str(workspace))
    return subprocess.run(command, env=env, check=False, capture_output=True, text=True, timeout=300)


def _wait_until_sleeping(trace: Path, process: subprocess.Popen, timeout_s: float = 240) -> None:
    """Until the slow tool call is in the trace (the agent is mid-session, mid-command)."""
    deadline = time.monotonic() + timeout_s
    while not any(isinstance(e, ToolCall) and SLOW in e.input for e in read_trace(trace).events):
        if process.poll() is not None:
            raise AssertionError(f"quaere run exited early ({process.returncode}): {process.stderr.read()}")
        assert time.monotonic() < deadline, "timed out waiting for the slow tool call"
        time.sleep(0.2)


def _events_in(data: bytes, scratch: Path) -> tuple:
    copy = scratch / "prefix.jsonl"
    copy.write_bytes(data)
    return read_trace(copy).events


def test_killed_campaign_resumes_and_keeps_its_trace_prefix(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    trace = workspace / ".quaere" / "trace.jsonl"
    replies = [
        # a wrong kernel first: the initial one, timed against itself on a busy machine, must not meet the goal
        Reply.bash(f"cp {KERNELS / 'wrong.cpp'} kernel.cpp && {EVAL}"),
        Reply.bash("echo key=$OPENAI_API_KEY", content="Which endpoint am I on?"),  # a secret in a tool output
        Reply.bash(SLOW, content="Let me think for a while."),
        Reply.bash(FAST_EVAL),
        Reply.text(DONE),
    ]
    env = dict(os.environ, OPENAI_API_KEY=SECRET)
    with ScriptedOpenAIServer(replies) as server:
        process = _start(workspace, server.base_url, env)
        try:
            _wait_until_sleeping(trace, process)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
        before = trace.read_bytes()
        killed = load_state(workspace / ".quaere" / "campaign.json")
        assert killed.status is CampaignStatus.RUNNING and killed.session_open
        resumed = _resume(workspace, env)
    assert resumed.returncode == 0 and "goal_met" in resumed.stdout, resumed.stderr

    after = trace.read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    added = read_trace(trace).events[len(_events_in(before, tmp_path)) :]
    assert isinstance(added[0], SessionEnd) and added[0].session == 1 and added[0].reason == "interrupted"
    assert isinstance(added[1], TrustModeEvent) and added[1].mode == "same_user"  # said again at every run
    assert isinstance(added[2], MethodStarted) and added[2].method is MethodKind.QUESTIONS  # each run says its method
    assert isinstance(added[3], SessionStart) and added[3].session == 2
    state = load_state(workspace / ".quaere" / "campaign.json")
    assert state.status is CampaignStatus.FINISHED and state.finished_reason == "goal_met"
    assert state.runs == 2 and state.sessions_started == 2 and state.tool_calls == 4
    assert SECRET not in after.decode() and SECRET not in (workspace / ".quaere" / "campaign.json").read_text()
    assert "key=[REDACTED]" in after.decode()


def test_ctrl_c_closes_the_session_as_interrupted_and_resume_carries_on(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    trace = workspace / ".quaere" / "trace.jsonl"
    env = dict(os.environ)
    with ScriptedOpenAIServer([Reply.bash(SLOW), Reply.text(DONE), Reply.bash(FAST_EVAL), Reply.text(DONE)]) as server:
        process = _start(workspace, server.base_url, env)
        _wait_until_sleeping(trace, process)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130 and "--resume" in stderr and "Traceback" not in stderr
        state = load_state(workspace / ".quaere" / "campaign.json")
        assert not state.session_open and state.status is CampaignStatus.RUNNING
        ends = [e for e in read_trace(trace).events if isinstance(e, SessionEnd)]
        assert [(e.session, e.reason) for e in ends] == [(1, "interrupted")]
        resumed = _resume(workspace, env)
    assert resumed.returncode == 0, resumed.stderr
    ends = [e for e in read_trace(trace).events if isinstance(e, SessionEnd)]
    assert [(e.session, e.reason) for e in ends] == [(1, "interrupted"), (2, "goal_met")]
