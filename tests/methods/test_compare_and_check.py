"""The comparison's figures on known traces, its plot and its refusals; the method check of verify; the
single report naming the method and an absent profiler."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from rich.console import Console

from quaere.records import MethodKind, Moment
from quaere.report.campaign_report import build_report
from quaere.report.compare import CompareError, active_minutes, column, compare, gains, load_comparison
from quaere.report.compare_html import render_compare_html
from quaere.report.compare_plot import METHOD_COLOUR, compare_png
from quaere.report.html import render_html
from quaere.report.method_check import MethodIssue, check_method
from quaere.report.terminal import print_summary
from quaere.trace import (
    EvaluationDone,
    MethodStarted,
    QuestionAsked,
    SessionEnd,
    SessionStart,
    SupervisorNote,
    ToolCall,
    ToolState,
)
from quaere.workspace import create_workspace

NO_NCU = ToolState(name="ncu", available=False, detail="ncu is not on PATH: the profile digest runs without it")


def _done(digest: str, geomean: float | None, correct: bool = True, ts: float = 0.0) -> EvaluationDone:
    return EvaluationDone(ts=ts, candidate_hash=digest, correct=correct, geomean_ratio=geomean,
                          ratios={"s1": geomean} if geomean else {})


def _call(command: str, ts: float) -> ToolCall:
    return ToolCall(ts=ts, call_id=command, tool="bash", input=command)


def _trace(method: MethodKind, bests: list[float | None], second_session_at: float = 600.0) -> list:
    """Two sessions of 60 s with a night between them; one tool call and one evaluation per best."""
    events: list = [MethodStarted(ts=0, method=method, tools=(NO_NCU,) if method is MethodKind.TOOLED else ()),
                    SessionStart(ts=0, session=1, agent="scripted")]
    for i, best in enumerate(bests):
        at = 10.0 * (i + 1) if i < 3 else second_session_at + 10.0 * (i - 2)
        if i == 3:
            events += [SessionEnd(ts=60, session=1, reason="completed"),
                       SessionStart(ts=second_session_at, session=2, agent="scripted")]
        events += [_call("quaere tool profile" if method is MethodKind.TOOLED else "quaere eval", at - 1),
                   _done(f"v{i}", best, ts=at)]
    return events + [SessionEnd(ts=second_session_at + 60, session=2, reason="goal_met")]


def test_active_minutes_skip_the_time_between_sessions():
    events = _trace(MethodKind.GOAL_ONLY, [1.0, 1.0, 1.5, 2.0, 2.0], second_session_at=36000.0)
    minutes = active_minutes(events)
    assert minutes[-1] == pytest.approx(2.0)  # two sessions of 60 s, the ten hours between them not counted
    evaluation_minutes = [m for e, m in zip(events, minutes, strict=True) if isinstance(e, EvaluationDone)]
    assert evaluation_minutes == pytest.approx([10 / 60, 20 / 60, 30 / 60, 70 / 60, 80 / 60])


def test_columns_count_gains_tool_calls_and_notes():
    events = _trace(MethodKind.TOOLED, [None, 1.0, 1.25, 1.25, 1.5]) + [
        SupervisorNote(loop="same_failure", evidence="e", text="t")]
    report = build_report(events, (), {}, {}, None)
    col = column("tooled", events, report, "initial")
    assert (col.method, col.evaluations, col.tool_calls, col.gains) == (MethodKind.TOOLED, 5, 5, 2)
    assert col.tool_calls_per_gain == pytest.approx(2.5) and col.best_geomean == 1.5
    assert col.quaere_tools == {"profile": 5} and col.supervisor_notes == 1 and col.tools == (NO_NCU,)
    assert gains(col.points[:2]) == 0  # the first best set is not a gain
    with pytest.raises(CompareError, match="at least two"):
        compare("toy", "initial", [col])


def _comparison():
    columns = []
    for method, bests in ((MethodKind.QUESTIONS, [1.0, 1.5, 2.0, 2.5, 3.0]),
                          (MethodKind.TOOLED, [1.0, 1.0, 1.25, 1.25, 1.5]),
                          (MethodKind.GOAL_ONLY, [1.0, 1.1, 1.1, 1.2, 1.2])):
        events = _trace(method, bests)
        columns.append(column(method.value, events, build_report(events, (), {}, {}, None), "initial"))
    return compare("toy", "initial", columns, ["tooled: a note"])


def test_plot_draws_one_line_per_method_in_both_panels():
    image = np.asarray(Image.open(io.BytesIO(compare_png(_comparison()))).convert("RGB"), dtype=np.int16)
    assert image.shape[:2] == (500, 1200)
    for colour in METHOD_COLOUR.values():
        rgb = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
        hits = (np.abs(image - rgb) <= 12).all(axis=2)
        assert hits[:, :560].sum() > 150 and hits[:, 640:].sum() > 150  # minutes on the left, tool calls right


def test_compare_page_is_escaped_and_names_the_absent_profiler():
    comparison = _comparison()
    page = render_compare_html(comparison, None)
    assert "ABSENT" in page and "ncu is not on PATH" in page and "tooled: a note" in page
    hostile = comparison.model_copy(update={"task": "<script>alert(1)</script>"})
    assert "<script>alert" not in render_compare_html(hostile, None)


def test_the_single_report_names_the_method_and_the_absent_profiler():
    report = build_report(_trace(MethodKind.TOOLED, [1.0, 1.5]), (), {}, {}, None)
    assert report.method is MethodKind.TOOLED and "ABSENT: ncu is not on PATH" in render_html(report, None)
    console = Console(record=True, width=160)
    print_summary(report, console)
    text = console.export_text()
    assert "method: tooled" in text and "tool ncu absent: ncu is not on PATH" in text
    assert build_report((), (), {}, {}, None).method is None


def test_method_check_findings():
    tooled = _trace(MethodKind.TOOLED, [1.0])
    assert check_method(tooled, "tooled") == ()
    assert [f.issue for f in check_method(tooled, "goal-only")] == [MethodIssue.MISMATCH]
    asked = tooled + [QuestionAsked(moment=Moment.PLATEAU, source="human", text="why?")]
    assert [f.issue for f in check_method(asked, "tooled")] == [MethodIssue.QUESTIONS_ASKED]
    mixed = tooled + [MethodStarted(method=MethodKind.QUESTIONS)]
    assert MethodIssue.MIXED in {f.issue for f in check_method(mixed, "questions")}
    assert [f.issue for f in check_method([], "tooled")] == [MethodIssue.NOT_RECORDED]
    assert check_method([], None) == ()  # a campaign from before methods: nothing recorded, nothing claimed


def _workspace(root: Path, name: str, task: str):
    kernel = root / f"{name}.cpp"
    kernel.write_text("int x;\n")
    return create_workspace(root / name, task, kernel)


def test_comparison_refuses_another_task_and_the_same_folder_twice(tmp_path: Path):
    first = _workspace(tmp_path, "a", "cpu_softmax")
    other = _workspace(tmp_path, "b", str(Path(__file__).parents[1] / "campaign" / "fixtures" / "quick_softmax"))
    with pytest.raises(CompareError, match=r"/b: a campaign of task '.*quick_softmax', not 'cpu_softmax'"):
        load_comparison([first, other], {})
    with pytest.raises(CompareError, match="named twice"):
        load_comparison([first, first], {})
    done = subprocess.run([sys.executable, "-m", "quaere", "report", str(first.root), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "not inside a quaere workspace" in done.stderr
