"""Attack: make the report (the figures a user compares arms by) show gains that never happened, by
appending evaluation summaries to the trace and evaluation records to the workspace's ledger copy.

Defence: `quaere report` reads a registered workspace's evaluations from the signed store, and matches
every evaluation summary of the trace to a signed record of the same candidate, recomputing its figures
from the record; a summary with none behind it is left out, and the report says so.
"""

from __future__ import annotations

from tests.hooks.factories import bench as timed
from tests.hooks.factories import entry, evaluation

from quaere.evaluate.ledger import append_evaluation
from quaere.evaluate.summary import to_trace_event
from quaere.records import Verdict
from quaere.store.records import Starter
from quaere.task.loader import load_task
from quaere.trace import SessionStart, TraceWriter
from quaere.workspace import content_hash, create_workspace

TASK = load_task("cpu_softmax")


def run_of(candidate_hash: str, speedup: float, created_at: float):
    """An evaluation of ``candidate_hash``: every scenario passed, every configuration ``speedup`` times
    the initial kernel."""
    ev = evaluation(candidate_hash, verdicts=[(s.id, Verdict.PASSED) for s in TASK.module.correctness_scenarios()],
                    benchmarks=[timed(s.id, 1.0, speedup) for s in TASK.module.benchmark_scenarios()],
                    created_at=created_at)
    return ev.model_copy(update={"task": "cpu_softmax"})


def test_forged_summaries_and_ledger_lines_do_not_reach_the_report(bench):
    mine = content_hash(bench.ws.candidate)
    genuine = run_of(mine, 1.1, created_at=2_000.0)
    pinned = bench.store.registration(bench.ws.id).task
    bench.store.append(bench.ws.id, lambda n: entry(genuine, task_sha256=pinned.sha256, workspace_id=bench.ws.id)
                       .model_copy(update={"sequence": n, "started_by": Starter.CALLER}))
    append_evaluation(bench.ws.ledger, genuine)  # the convenience copy quaere writes

    forged = run_of("f" * 64, 3.0, created_at=3_000.0)  # a version never evaluated
    append_evaluation(bench.ws.ledger, forged)
    writer = TraceWriter(bench.ws.trace)
    writer.write(SessionStart(ts=1_000.0, agent="external", session=1))
    writer.write(to_trace_event(genuine, TASK.spec).model_copy(update={"ts": 2_000.0, "session": 1}))
    inflated = to_trace_event(run_of(mine, 3.0, 2_500.0), TASK.spec)  # a second, faster run of the same file
    writer.write(inflated.model_copy(update={"ts": 2_500.0, "session": 1}))
    writer.write(to_trace_event(forged, TASK.spec).model_copy(update={"ts": 3_000.0, "session": 1}))

    done = bench.quaere("report")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "3.000x" not in text and "3.00x" not in text, text
    assert "1.100x" in text or "1.10x" in text, text
    assert "2 evaluation summaries with no signed evaluation of that candidate in the store" in text
    assert "1 evaluation record in the workspace's ledger copy are not in the signed store" in text


def test_an_unregistered_workspace_is_reported_from_its_files_and_says_so(bench, tmp_path):
    plain = create_workspace(tmp_path / "plain", "cpu_softmax", TASK.initial_kernel)  # never `quaere init`ed
    append_evaluation(plain.ledger, run_of(content_hash(plain.candidate), 1.1, created_at=2_000.0))
    done = bench.quaere("report", cwd=plain.root)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "not registered in the store" in text and "which are not signed" in text
    assert "1.100x" in text or "1.10x" in text, text
