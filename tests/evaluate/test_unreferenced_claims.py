"""A candidate's claims are bounded by the trusted initial kernel timed beside it. When that kernel could not be timed
(it failed, or a candidate starved its runner of memory or devices), nothing bounds them: the candidate's timing is
``unverified``, never ``measured`` on its own word."""

from __future__ import annotations

import shutil
from pathlib import Path

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.records import TimingStatus
from quaere.task.loader import load_task

BENCH = "bench-r2048-c512"


def test_claims_without_the_trusted_kernel_beside_them_are_unverified(cpu_task, cache_dir: Path, two_scenarios: Path,
                                                                     tmp_path: Path) -> None:
    folder = tmp_path / "reference_fails"
    shutil.copytree(cpu_task.folder, folder)
    kernel = folder / "kernel.cpp"
    # The task's own initial kernel, refusing the benchmark sizes (over a million elements) and no correctness size.
    refusal = "    if (static_cast<long>(rows) * cols >= 1000000) return 9;\n"
    kernel.write_text(kernel.read_text().replace("    if (x == nullptr", refusal + "    if (x == nullptr", 1))
    options = EvalOptions(seed=7, scenarios_file=two_scenarios, benchmark_ids=frozenset({BENCH}), cache_dir=cache_dir)
    evaluation = run_evaluation(load_task(str(folder)), cpu_task.initial_kernel, options)
    assert evaluation.correct
    bench = evaluation.benchmarks[0]
    assert bench.timing("initial").status is TimingStatus.FAILED
    candidate = bench.timing("candidate")
    assert candidate.status is TimingStatus.UNVERIFIED, candidate
    assert "trusted initial kernel" in candidate.detail and "returned 9" in candidate.detail
    # The same candidate beside a working initial kernel is measured.
    honest = run_evaluation(cpu_task, cpu_task.initial_kernel, options)
    assert honest.benchmarks[0].timing("candidate").status is TimingStatus.MEASURED
