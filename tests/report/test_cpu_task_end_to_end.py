"""Real parts end to end on the CPU task: a real evaluation, export, and verify re-running the evaluator."""

from __future__ import annotations

import subprocess
import sys

import pytest

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.ledger import append_evaluation
from quaere.evaluate.summary import to_trace_event
from quaere.report.export import export_bundle
from quaere.report.rerun import QuaereEvaluator
from quaere.report.verify import RerunStatus, check_manifest, rerun_final_kernel
from quaere.task.loader import load_task
from quaere.trace import TraceWriter
from quaere.workspace import create_workspace

pytestmark = pytest.mark.slow


def test_export_of_a_real_cpu_campaign_verifies_by_re_running_the_evaluator(tmp_path):
    task = load_task("cpu_softmax")
    ws = create_workspace(tmp_path / "ws", task="cpu_softmax", initial_kernel=task.initial_kernel)
    options = EvalOptions(benchmark=False, cache_dir=tmp_path / "cache")
    evaluation = run_evaluation(task, ws.candidate, options)
    assert evaluation.correct, evaluation.note
    ws.keep_version(ws.candidate)
    append_evaluation(ws.ledger, evaluation)
    TraceWriter(ws.trace).write(to_trace_event(evaluation, task.spec))

    bundle = tmp_path / "bundle"
    manifest = export_bundle(ws, bundle, {}, {})
    assert manifest["final_candidate_hash"] == evaluation.candidate_hash
    assert check_manifest(bundle) == ()
    outcome = rerun_final_kernel(bundle, QuaereEvaluator())
    assert outcome.status is RerunStatus.PASSED, outcome.detail
    assert outcome.evaluation is not None and outcome.evaluation.candidate_hash == evaluation.candidate_hash

    done = subprocess.run([sys.executable, "-m", "quaere", "verify", str(bundle)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert "re-run: passed" in done.stdout
