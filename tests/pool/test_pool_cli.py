"""The command line on a running pool: ``quaere eval --pool ADDRESS`` joins it from another process, and
``quaere run --parallel 2`` gives two scripted campaigns the same judges; ``quaere report`` compares the
campaigns of the folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from quaere.records import Evaluation, Verdict

if TYPE_CHECKING:
    from quaere.evaluate.pool_ray import RayPool

pytest.importorskip("ray", reason="the evaluation pool needs Ray: pip install 'quaere[cluster]'")

QUICK_TASK = Path(__file__).parent.parent / "campaign" / "fixtures" / "quick_softmax"


def _quaere(*args: str, cwd: Path, timeout_s: float = 300) -> subprocess.CompletedProcess:
    # os.environ carries what ray.init set in this process (its authentication mode) and the test's store.
    return subprocess.run([sys.executable, "-m", "quaere", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout_s, env=dict(os.environ), check=False)


def test_quaere_eval_joins_a_running_pool_by_its_address(ray_session: str, cpu_pool: RayPool, tmp_path: Path) -> None:
    done = _quaere("eval", "--task", "cpu_softmax", "--no-benchmark", "--json", "--pool", ray_session, cwd=tmp_path)

    assert done.returncode == 0, done.stderr[-2000:]
    evaluation = Evaluation.model_validate_json(done.stdout)  # exactly one JSON object: Ray printed nothing there
    assert evaluation.correct and {v.verdict for v in evaluation.correctness} == {Verdict.PASSED}
    assert len(evaluation.correctness) == 20


def test_two_campaigns_share_the_pool_and_report_reads_their_folder(ray_session: str, cpu_pool: RayPool,
                                                                    tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"bash": "quaere eval"}, {"stop": "done"}]))
    done = _quaere("run", "--task", str(QUICK_TASK), "--agent", "scripted", "--script", str(script), "--sessions",
                   "1", "--parallel", "2", "--pool", ray_session, "--workspace", "runs", cwd=tmp_path, timeout_s=480)

    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == ["campaign-1", "campaign-2"]
    for name in ("campaign-1", "campaign-2"):
        ledger = (tmp_path / "runs" / name / ".quaere" / "ledger.jsonl").read_text().splitlines()
        evaluations = [Evaluation.model_validate_json(line) for line in ledger]
        assert evaluations and all(e.correct for e in evaluations)
        assert {b.placement.worker for e in evaluations for b in e.benchmarks} <= set(cpu_pool.actors)
        assert (tmp_path / "runs" / f"{name}.log").exists()

    report = _quaere("report", "runs", cwd=tmp_path)  # the folder: the comparison of its campaigns
    assert report.returncode == 0, report.stderr
    assert "campaigns compared" in report.stdout
    assert "(campaign-1)" in report.stdout and "(campaign-2)" in report.stdout
