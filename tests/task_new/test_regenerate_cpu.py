"""`quaere task new` on the CPU task's own kernel file and a NumPy reference regenerates a task that
`quaere task check` passes, and that gives every fixture candidate the same verdicts as the shipped task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.candidate_sources import self_contained
from tests.task_new.conftest import CPU_KERNEL, REFERENCES, SOFTMAX_ANSWERS, quaere

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.task.loader import load_task

FIXTURES = Path(__file__).parents[1] / "fixtures" / "candidates"
# A single row (where the process-killing fixtures misbehave) and a small matrix, in the params both tasks read.
SCENARIOS = [{"id": "single-row", "params": {"rows": 1, "cols": 5}},
             {"id": "three-rows", "params": {"rows": 3, "cols": 7}}]


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("regenerated")
    made = quaere("task", "new", "softmax_again", "--from", str(CPU_KERNEL), "--reference", f"{REFERENCES}:softmax",
                  *SOFTMAX_ANSWERS, cwd=root, cache=cache_dir)
    assert made.returncode == 0, made.stderr
    assert "reference called on" in made.stdout and "place(s) to fill" not in made.stdout
    return root / "softmax_again"


def test_the_regenerated_task_is_inferred_and_sound(regenerated: Path, cache_dir: Path) -> None:
    task_py = (regenerated / "task.py").read_text()
    assert '"x": Buffer("input", "float32", ("rows", "cols"))' in task_py  # const: an input
    assert '"y": Buffer("output", "float32", ("rows", "cols"))' in task_py  # the reference does not take it
    assert "def softmax" not in task_py and "references.py" in task_py  # called, never copied
    assert (regenerated / "kernel.cpp").read_bytes() == CPU_KERNEL.read_bytes()
    checked = quaere("task", "check", str(regenerated), cwd=regenerated.parent, cache=cache_dir)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "sound" in checked.stdout and "FAIL" not in checked.stdout
    assert max(len(line) for line in checked.stdout.splitlines()) <= 80
    task = load_task(str(regenerated))
    ids = [s.id for s in task.module.correctness_scenarios()]
    assert {"rows1-cols1", "rows129-cols128", "rows1021-cols1000"} <= set(ids) and len(ids) >= 40
    assert any(s.params["rows"] > 10**6 for s in task.module.correctness_scenarios())  # the largest that fits
    slack = ("hidden_work_abs_ms", "hidden_work_rel", "drain_abs_ms")  # a CPU runner's, not the GPU's defaults
    shipped = load_task("cpu_softmax").spec.timing
    assert [getattr(task.spec.timing, k) for k in slack] == [getattr(shipped, k) for k in slack]


def test_same_verdicts_as_the_shipped_task_on_every_fixture(regenerated: Path, cache_dir: Path, tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps(SCENARIOS))
    options = EvalOptions(seed=5, benchmark=False, scenarios_file=scenarios, scenario_timeout_s=5.0,
                          cache_dir=cache_dir)
    shipped, again = load_task("cpu_softmax"), load_task(str(regenerated))
    fixtures = sorted(self_contained(FIXTURES).glob("*.cpp"))  # as the evaluator takes them: one file each
    assert len(fixtures) >= 10
    seen = set()
    for fixture in fixtures:
        verdicts = []
        for task in (shipped, again):
            evaluation = run_evaluation(task, fixture, options)
            verdicts.append((evaluation.build.status, tuple(f.rule for f in evaluation.audit),
                             tuple(v.verdict for v in evaluation.correctness)))
        assert verdicts[0] == verdicts[1], fixture.name
        seen.update(verdicts[0][2])
    assert len(seen) >= 8  # the fixtures cover the verdicts, so agreeing means something
