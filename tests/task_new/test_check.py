"""`quaere task check`'s questions on tasks made to fail them: a one-ulp-off output of an exact task, a
reference null candidates match, a sample() that disagrees with the full reference, bad roofline figures
and benchmark sizes, places left to fill."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.task_new.conftest import CPU_KERNEL, REFERENCES, write_kernel

from quaere.task.check import (
    CheckName,
    CheckOptions,
    CheckStatus,
    benchmark_row,
    check_task,
    reference_rows,
    static_roofline,
)
from quaere.task.loader import load_task
from quaere.task.new import create_task
from quaere.task.scaffold import Answers
from quaere.task.todos import find_todos

DOUBLE = ('extern "C" int double_it(const float* x, float* y, int n) {\n'
          "    for (int i = 0; i < n; ++i) y[i] = 2 * x[i];\n    return 0;\n}\n")
VECTOR = Answers(shapes={"x": ("n",), "y": ("n",)}, flops="n")


def doubling_task(tmp_path: Path, function: str, name: str = "doubling") -> Path:
    kernel = write_kernel(tmp_path, "double.cpp", DOUBLE)
    create_task(tmp_path / name, kernel, None, f"{REFERENCES}:{function}", VECTOR)
    return tmp_path / name


def rows_by_name(rows) -> dict:
    return {row.name: row for row in rows}


def set_in(path: Path, pattern: str, replacement: str) -> None:
    text = path.read_text()
    assert re.search(pattern, text, re.M), pattern
    path.write_text(re.sub(pattern, replacement, text, flags=re.M))


def test_an_exact_task_must_reject_a_one_ulp_off_output(tmp_path: Path) -> None:
    folder = doubling_task(tmp_path, "doubled")
    rows = rows_by_name(reference_rows(load_task(str(folder)), seed=3)[0])
    assert rows[CheckName.REFERENCES].status is CheckStatus.PASSED
    assert rows[CheckName.NULLS].status is CheckStatus.PASSED
    ulp = rows[CheckName.ONE_ULP]
    assert ulp.status is CheckStatus.FAILED and "floor 1e-06 is not below one ulp" in ulp.detail
    set_in(folder / "task.toml", r"^floor = .*$", "floor = 0.0")
    fixed = rows_by_name(reference_rows(load_task(str(folder)), seed=3)[0])
    assert fixed[CheckName.ONE_ULP].status is CheckStatus.PASSED and "exact task" in fixed[CheckName.ONE_ULP].detail


def test_a_reference_that_nulls_match_is_refused(tmp_path: Path) -> None:
    folder = doubling_task(tmp_path, "zeros_like", name="zeros")
    nulls = rows_by_name(reference_rows(load_task(str(folder)), seed=3)[0])[CheckName.NULLS]
    assert nulls.status is CheckStatus.FAILED and "zeros would pass" in nulls.detail


@pytest.mark.parametrize(("function", "status"), [("softmax", CheckStatus.PASSED),
                                                  ("softmax_columns", CheckStatus.FAILED)])
def test_sample_rows_is_checked_against_the_full_reference(function: str, status: CheckStatus, tmp_path: Path) -> None:
    answers = Answers(shapes={"x": ("rows", "cols"), "y": ("rows", "cols")}, flops="5 * rows * cols", row_sample=True)
    create_task(tmp_path / "sampled", CPU_KERNEL, None, f"{REFERENCES}:{function}", answers)
    task = load_task(str(tmp_path / "sampled"))
    sample = rows_by_name(reference_rows(task, seed=2)[0])[CheckName.SAMPLE]
    assert sample.status is status, sample.detail
    if status is CheckStatus.FAILED:
        assert "sampled fp32 reference of 'y'" in sample.detail


def test_roofline_figures_and_benchmark_sizes(tmp_path: Path) -> None:
    folder = doubling_task(tmp_path, "doubled")
    set_in(folder / "task.py", r'^FLOPS = "n"', 'FLOPS = "0 - n"')
    set_in(folder / "task.py", r"^BENCHMARK = \[\n(    .*\n)*\]", 'BENCHMARK = [{"n": 16}]')
    task = load_task(str(folder))
    assert any("flops() = -" in f for f in static_roofline(task))
    bench = benchmark_row(task)
    assert bench.status is CheckStatus.FAILED and "bench-n16" in bench.detail and "make it larger" in bench.detail


def test_places_left_are_listed_and_nothing_else_runs(tmp_path: Path) -> None:
    created = create_task(tmp_path / "open", CPU_KERNEL, None, None, Answers())
    places = [t.what.split(":")[0] for t in created.todos]
    assert places[:4] == ["x", "y", "y", "the reference"] and places[4].startswith("FLOPs of one call")
    assert len(places) == 5
    assert "'input' or 'output'" in created.todos[1].what  # y is not const and no reference says more
    report = check_task(str(tmp_path / "open"), CheckOptions(cache_dir=tmp_path / "cache"))
    assert not report.sound and report.rows[0].status is CheckStatus.FAILED
    assert "task.py:" in report.rows[0].detail and "'input' or 'output'" in report.rows[0].detail
    assert {row.status for row in report.rows[1:]} == {CheckStatus.SKIPPED}


def test_find_todos_reads_the_tree_not_the_text() -> None:
    source = ('from quaere.task import kit\n# todo("in a comment")\nA = kit.todo("first")\nB = "todo(no)"\n'
              'C = todo("second")\n')
    assert [(t.line, t.what) for t in find_todos(source)] == [(3, "first"), (5, "second")]
