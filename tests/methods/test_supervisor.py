"""The supervisor: which evaluation sequences are loops of failed edits, and what the agent is told."""

from __future__ import annotations

from pathlib import Path

from quaere.agents.base import StopAnswer, ToolAnswer
from quaere.methods.settings import TooledSettings
from quaere.methods.supervisor import (
    NOTE,
    SupervisedHooks,
    Supervisor,
    failure_of,
    judged,
    readded_lines,
    same_failure,
)
from quaere.records import Verdict
from quaere.trace import SupervisorNote, TraceWriter, read_trace
from quaere.workspace import create_workspace

from .factories import evaluation

WRONG = (Verdict.PASSED, Verdict.WRONG)


def test_failure_signatures_name_the_build_the_audit_rules_or_the_verdicts():
    assert failure_of(evaluation("a", 1, built=False)) == "build_failed"
    assert failure_of(evaluation("a", 1, audit=("banned_needed", "cutlass_headers"))) == (
        "audit: banned_needed, cutlass_headers")
    assert failure_of(evaluation("a", 1, verdicts=(Verdict.CRASHED, Verdict.WRONG, Verdict.WRONG))) == "crashed, wrong"
    assert failure_of(evaluation("a", 1)) is None


def test_same_failure_speaks_at_each_multiple_of_the_streak():
    runs = [evaluation(f"v{i}", i, verdicts=WRONG) for i in range(7)]
    fired = [same_failure(runs[: n + 1], 3) is not None for n in range(7)]
    assert fired == [False, False, True, False, False, True, False]
    broken = [evaluation("a", 0, verdicts=WRONG), evaluation("b", 1, built=False), evaluation("c", 2, verdicts=WRONG)]
    assert same_failure(broken, 2) is None  # a different failure in between breaks the streak
    assert "3 evaluations all failed the same way (wrong)" in same_failure(runs[:3], 3).evidence


def test_timing_only_runs_are_neither_failures_nor_successes():
    retime = evaluation("a", 2, verdicts=(), medians={"s": (1.0, 2.0)})
    runs = [evaluation("a", 0, verdicts=WRONG), evaluation("a", 1, verdicts=WRONG), retime]
    assert judged(runs) == runs[:2]


def test_readded_lines_on_the_newest_version_only():
    sources = {"a": b"x = 1\ny = 2\nz = 3\n", "b": b"x = 1\n", "c": b"x = 1\ny = 2\nz = 3\nw = 4\n"}
    runs = [evaluation(h, i, verdicts=WRONG) for i, h in enumerate("abc")]
    loop = readded_lines(runs, sources, 2)
    assert loop is not None and "puts back 2 of its 3 added lines" in loop.evidence
    assert readded_lines(runs, sources, 3) is None
    assert readded_lines(runs[:2], sources, 1) is None  # nothing was deleted before the newest transition


def _workspace(tmp_path: Path):
    kernel = tmp_path / "kernel.cpp"
    kernel.write_text("int x;\n")
    return create_workspace(tmp_path / "ws", "toy", kernel)


class _Inner:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def record(self, event) -> None:
        self.calls.append("record")

    def on_prompt(self, prompt: str) -> str:
        return "start question"

    def after_tool(self, tool, tool_input, output) -> ToolAnswer:
        return ToolAnswer(context="a question")

    def on_stop(self, last_message: str) -> StopAnswer:
        return StopAnswer(allow=False, reason="goal unmet")


def test_supervised_hooks_add_the_note_once_and_trace_it(tmp_path: Path):
    ws = _workspace(tmp_path)
    ledger = [evaluation("old", 0, verdicts=WRONG)]  # history before the run: never a loop by itself
    supervisor = Supervisor(ws, TooledSettings(same_failure_repeats=2), lambda: (list(ledger), []))
    hooks = SupervisedHooks(_Inner(), supervisor, TraceWriter(ws.trace), session=3)
    assert hooks.after_tool("bash", {}, "").context == "a question"
    ledger.append(evaluation("new", 1, verdicts=WRONG))
    answer = hooks.after_tool("bash", {}, "")
    assert answer.context.startswith("a question\n\nquaere supervisor: the last 2 evaluations")
    assert hooks.after_tool("bash", {}, "").context == "a question"  # no new evaluation: said once
    notes = [e for e in read_trace(ws.trace).events if isinstance(e, SupervisorNote)]
    assert len(notes) == 1 and notes[0].session == 3 and notes[0].loop == "same_failure"
    assert notes[0].text == NOTE.format(evidence=notes[0].evidence)
    assert hooks.on_prompt("go") == "start question" and not hooks.on_stop("done").allow
