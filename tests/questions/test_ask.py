"""``quaere ask`` end to end on workspaces built here: moment, evidence, suggestions, record and queue."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from quaere.cli import app
from quaere.questions.ask import load_task_spec
from quaere.questions.queue import Delivery, QueueEmpty, pending, pop_next, store_queue
from quaere.questions.situation import context_of
from quaere.records import Moment
from quaere.store import Store
from quaere.task.loader import load_task
from quaere.trace import QuestionAsked, SessionStart, TraceWriter, read_trace
from quaere.workspace import create_workspace

from .helpers import evaluation, failure, said

runner = CliRunner()

HOPPER_TASK = """\
name = "tiny_gemm"
description = "A test task on Hopper with one comparison."
device = "cuda"
target = "sm_90a"
initial_kernel = "kernel.cu"
entry_point = "run"
build = "nvcc -gencode arch=compute_90a,code=sm_90a -shared {source} -o {output}"
[roofline]
matrix_tflops = 790.0
bandwidth_gbps = 4000.0
[[comparisons]]
name = "vendor"
[goal]
targets = [{ baseline = "initial", ratio = 1.0 }]
"""


@pytest.fixture()
def cpu_workspace(tmp_path: Path):
    task = load_task("cpu_softmax")
    return create_workspace(tmp_path / "ws", "cpu_softmax", task.initial_kernel)


@pytest.fixture()
def hopper_workspace(tmp_path: Path):
    folder = tmp_path / "tiny_gemm"
    folder.mkdir()
    (folder / "task.toml").write_text(HOPPER_TASK)
    (folder / "kernel.cu").write_text('extern "C" int run() { return 0; }\n')
    return create_workspace(tmp_path / "ws", str(folder), folder / "kernel.cu")


def queue(ws):
    """The workspace's queue in the test's store (where `quaere ask` signs it)."""
    return store_queue(Store(Path(os.environ["QUAERE_STORE_DIR"])), ws.id)


def write(ws, *events) -> None:
    writer = TraceWriter(ws.trace)
    for event in events:
        writer.write(event)


def quaere(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "quaere", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_ask_shows_the_moment_records_and_queues(cpu_workspace):
    ws = cpu_workspace
    write(ws, SessionStart(ts=0, agent="external", session=1), evaluation(10, 1.0), evaluation(20, 1.6))
    write(ws, QuestionAsked(ts=5, moment=Moment.CAMPAIGN_START, source="bank", entry_id="framing.hot-loop", text="?"))

    shown = quaere("ask", "-w", str(ws.root))
    assert shown.returncode == 0, shown.stderr
    assert "moment: suspicious_gain" in shown.stdout
    assert "+60%" in shown.stdout  # the evidence
    assert "arch none, comparison yes" in shown.stdout
    assert sum(isinstance(e, QuestionAsked) for e in read_trace(ws.trace).events) == 1  # showing records nothing
    assert pending(queue(ws)) == []

    picked = quaere("ask", "-w", str(ws.root), "--pick", "2")
    assert picked.returncode == 0, picked.stderr
    question = [e for e in read_trace(ws.trace).events if isinstance(e, QuestionAsked)][-1]
    assert question.moment is Moment.SUSPICIOUS_GAIN and question.source == "human"
    assert question.entry_id and question.entry_id in shown.stdout and question.session == 1
    queued = pop_next(queue(ws))
    assert isinstance(queued, Delivery) and queued.question.entry_id == question.entry_id
    assert isinstance(pop_next(queue(ws)), QueueEmpty)

    # The gain was questioned: it no longer holds, and the question asked is not suggested again.
    again = quaere("ask", "-w", str(ws.root), "--moment", "suspicious_gain")
    assert "suspicious_gain  no" in again.stdout
    assert question.entry_id not in again.stdout


def test_ask_with_own_text(cpu_workspace):
    ws = cpu_workspace
    write(ws, evaluation(0, 1.0), failure(10), said(11, "The mismatch is only slightly above the tolerance, fine."))
    result = runner.invoke(
        app, ["ask", "-w", str(ws.root), "--text", "Where are the worst elements?", "--kind", "information"]
    )
    assert result.exit_code == 0, result.output
    assert "moment: explained_failure" in result.output
    question = read_trace(ws.trace).events[-1]
    assert isinstance(question, QuestionAsked)
    assert question.entry_id is None and question.text == "Where are the worst elements?"
    assert question.kind is not None and question.kind.value == "information"
    assert [q.text for q in pending(queue(ws))] == ["Where are the worst elements?"]


def test_hopper_task_context(hopper_workspace):
    ws = hopper_workspace
    context = context_of(load_task_spec(ws))
    assert (context.arch, context.has_comparison, context.task) == ("hopper", True, "tiny_gemm")
    write(ws, QuestionAsked(ts=0, moment=Moment.CAMPAIGN_START, source="human", text="Go?"))
    write(ws, *[evaluation(1 + t, 1.0) for t in range(7)])
    result = runner.invoke(app, ["ask", "-w", str(ws.root)])
    assert result.exit_code == 0, result.output
    assert "moment: plateau" in result.output and "arch hopper, comparison yes" in result.output


def test_no_moment_holds_asks_for_one(hopper_workspace):
    ws = hopper_workspace
    write(ws, QuestionAsked(ts=0, moment=Moment.CAMPAIGN_START, source="human", text="Go?"), evaluation(1, 1.0))
    result = runner.invoke(app, ["ask", "-w", str(ws.root), "--pick", "1"])
    assert result.exit_code == 2 and "--moment" in result.output
    assert pending(queue(ws)) == []
    named = runner.invoke(app, ["ask", "-w", str(ws.root), "--moment", "plateau", "--pick", "1"])
    assert named.exit_code == 0, named.output
    assert pending(queue(ws))[0].moment is Moment.PLATEAU


def test_bad_pick_and_outside_a_workspace(cpu_workspace, tmp_path):
    result = runner.invoke(app, ["ask", "-w", str(cpu_workspace.root), "--pick", "7"])
    assert result.exit_code == 2 and "suggestion 7 does not exist" in result.output
    outside = runner.invoke(app, ["ask", "-w", str(tmp_path)])
    assert outside.exit_code == 2 and "not inside a quaere workspace" in outside.output


def test_a_torn_trace_line_is_reported_not_fatal(cpu_workspace):
    ws = cpu_workspace
    write(ws, evaluation(0, 1.0))
    with ws.trace.open("a") as f:
        f.write('{"type": "evaluation", "ts": 1, "cand')
    result = quaere("ask", "-w", str(ws.root))
    assert result.returncode == 0, result.stderr
    assert "trace:" in result.stderr and "not JSON" in result.stderr
    assert "moment: campaign_start" in result.stdout
