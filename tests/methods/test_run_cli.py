"""``quaere run --method``: bad input gets one line and starts nothing; a resume keeps the method."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from quaere.records import MethodKind
from quaere.trace import MethodStarted, read_trace

from .arms import TASK


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "quaere", "run", "--no-live", *args], capture_output=True,
                          text=True, timeout=300, env=env or dict(os.environ))


def _one_line(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def test_an_unknown_method_is_named(tmp_path: Path):
    _one_line(_run("--task", str(TASK), "--method", "avo", "--workspace", str(tmp_path / "ws")),
              "unknown method 'avo'", "questions, tooled, goal-only")
    assert not (tmp_path / "ws").exists()


def test_bad_docs_sources_and_a_missing_quaere_start_nothing(tmp_path: Path):
    ws = tmp_path / "ws"
    common = ("--task", str(TASK), "--workspace", str(ws), "--agent", "scripted", "--script", "/dev/null")
    _one_line(_run(*common, "--method", "tooled", "--docs", str(tmp_path / "nowhere")), "nowhere: no such folder")
    _one_line(_run(*common, "--docs", str(tmp_path)), "--docs is for --method tooled")
    _one_line(_run(*common, "--method", "goal-only", "--source", "human"), "--method goal-only asks none")
    # Started with no quaere on its PATH, quaere run gives the agent its own (the tooled arm's tools need
    # it): the PATH check passes, and the next problem, the empty script, is the one said.
    no_quaere = {**os.environ, "PATH": str(tmp_path)}
    _one_line(_run(*common, "--method", "tooled", env=no_quaere), "/dev/null: not valid JSON")
    assert not ws.exists()


def test_a_resume_keeps_the_method_and_refuses_another(tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"stop": "done"}]))
    ws = tmp_path / "ws"
    first = _run("--task", str(TASK), "--workspace", str(ws), "--agent", "scripted", "--script", str(script),
                 "--method", "goal-only", "--sessions", "1")
    assert first.returncode == 0 and "campaign ended: sessions" in first.stdout, first.stderr
    _one_line(_run("--resume", "--workspace", str(ws), "--method", "tooled"),
              "this campaign runs --method goal-only", "cannot be resumed as --method tooled")
    again = _run("--resume", "--workspace", str(ws), "--sessions", "2")
    assert again.returncode == 0, again.stderr
    methods = [e.method for e in read_trace(ws / ".quaere" / "trace.jsonl").events if isinstance(e, MethodStarted)]
    assert methods == [MethodKind.GOAL_ONLY, MethodKind.GOAL_ONLY]
