"""The CPU task evaluated for real: a c++ build, a worker subprocess, the ledger."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.evaluate.conftest import CANDIDATES

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.ledger import append_evaluation, read_ledger
from quaere.records import BuildStatus, TimingStatus, Verdict

# fixture file -> (verdict on the single-row scenario, verdict on the three-row scenario)
EXPECTED = {
    "crash_segfault.cpp": (Verdict.CRASHED, Verdict.PASSED),
    "hang.cpp": (Verdict.TIMED_OUT, Verdict.PASSED),
    "exit3.cpp": (Verdict.CRASHED, Verdict.PASSED),
    "writes_input.cpp": (Verdict.INPUT_MODIFIED, Verdict.INPUT_MODIFIED),
    "out_of_bounds.cpp": (Verdict.GUARD_CORRUPTED, Verdict.GUARD_CORRUPTED),
    "unwritten.cpp": (Verdict.UNWRITTEN, Verdict.UNWRITTEN),
    "returns_nan.cpp": (Verdict.NONFINITE, Verdict.NONFINITE),
    "slightly_wrong.cpp": (Verdict.WRONG, Verdict.WRONG),
    "returns_nonzero.cpp": (Verdict.UNSUPPORTED, Verdict.UNSUPPORTED),
    "prints_to_stdout.cpp": (Verdict.PASSED, Verdict.PASSED),
}


def test_initial_kernel_passes_every_scenario_and_is_timed(cpu_task, cache_dir: Path) -> None:
    options = EvalOptions(seed=11, cache_dir=cache_dir, benchmark_ids=frozenset({"bench-r8192-c128"}))
    evaluation = run_evaluation(cpu_task, cpu_task.initial_kernel, options)
    assert evaluation.correct, [(v.scenario_id, v.verdict, v.detail) for v in evaluation.failing()]
    assert len(evaluation.correctness) == len(cpu_task.module.correctness_scenarios()) >= 20
    assert all(v.seed == 11 for v in evaluation.correctness)
    assert all(e.max_abs_err <= e.bound for v in evaluation.correctness for e in v.errors)
    (bench,) = evaluation.benchmarks
    assert [t.impl for t in bench.timings] == ["candidate", "initial", "numpy"]
    for timing in bench.timings:
        assert timing.status is TimingStatus.MEASURED, timing.detail
        assert len(timing.samples_ms) >= cpu_task.spec.timing.min_reps
        assert timing.tflops > 0
    assert not bench.suspect


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_adversarial_candidate_gets_its_verdict(fixture: str, cpu_task, quick: EvalOptions, tmp_path: Path) -> None:
    evaluation = run_evaluation(cpu_task, CANDIDATES / fixture, quick)
    got = tuple(v.verdict for v in evaluation.correctness)
    assert got == EXPECTED[fixture], [v.detail for v in evaluation.correctness]
    assert evaluation.correct is all(v.passed for v in got)
    ledger = tmp_path / "ledger.jsonl"
    append_evaluation(ledger, evaluation)
    read = read_ledger(ledger)
    assert read.problems == () and len(read.evaluations) == 1
    assert read.evaluations[0].model_dump_json() == evaluation.model_dump_json()  # NaN != NaN: compare text


def test_crash_detail_names_the_signal(cpu_task, quick: EvalOptions) -> None:
    evaluation = run_evaluation(cpu_task, CANDIDATES / "crash_segfault.cpp", quick)
    assert "SIGSEGV" in evaluation.correctness[0].detail
    exit3 = run_evaluation(cpu_task, CANDIDATES / "exit3.cpp", quick)
    assert "status 3" in exit3.correctness[0].detail


def test_compile_error_is_a_verdict_with_the_log_tail(cpu_task, quick: EvalOptions) -> None:
    evaluation = run_evaluation(cpu_task, CANDIDATES / "compile_error.cpp", quick)
    assert evaluation.build.status is BuildStatus.BUILD_FAILED
    assert "undefined_name" in evaluation.build.log_tail
    assert not evaluation.ran and not evaluation.correct
    assert {v.verdict for v in evaluation.correctness} == {Verdict.NOT_RUN}


def test_build_records_included_headers(cpu_task, quick: EvalOptions) -> None:
    """The toolchain's headers, from the depfile; the build's copy of the source itself is none of them."""
    evaluation = run_evaluation(cpu_task, CANDIDATES / "returns_nan.cpp", quick)
    headers = evaluation.build.included_headers
    assert any(Path(h).name == "cmath" for h in headers) and not any(h.endswith("candidate.cpp") for h in headers)


def test_timed_outputs_are_checked(cpu_task, quick: EvalOptions) -> None:
    """A kernel right on its first call and wrong afterwards passes correctness but fails timing."""
    options = quick.model_copy(update={"benchmark": True, "benchmark_ids": frozenset({"bench-r8192-c128"})})
    evaluation = run_evaluation(cpu_task, CANDIDATES / "wrong_when_timed.cpp", options)
    assert all(v.verdict.passed for v in evaluation.correctness)
    candidate = evaluation.benchmarks[0].timing("candidate")
    assert candidate is not None and candidate.status is TimingStatus.FAILED
    assert "differs from the reference of its own inputs" in candidate.detail
    assert evaluation.benchmarks[0].timing("initial").status is TimingStatus.MEASURED


def test_no_device_builds_and_audits_only(cpu_task, quick: EvalOptions) -> None:
    evaluation = run_evaluation(cpu_task, cpu_task.initial_kernel, quick.model_copy(update={"no_device": True}))
    assert evaluation.built and not evaluation.ran and "nothing was run" in evaluation.note
    assert {v.verdict for v in evaluation.correctness} == {Verdict.NOT_RUN}


def test_harness_weak_when_a_null_candidate_would_pass(cpu_task, quick: EvalOptions, tmp_path: Path) -> None:
    """A task whose tolerance is so loose that all zeros pass proves nothing: every scenario says so."""
    import shutil

    from quaere.task.loader import load_task

    folder = tmp_path / "loose"
    shutil.copytree(cpu_task.folder, folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("floor = 1e-6", "floor = 10.0"))
    evaluation = run_evaluation(load_task(str(folder)), cpu_task.initial_kernel, quick)
    assert {v.verdict for v in evaluation.correctness} == {Verdict.HARNESS_WEAK}
    assert "zeros" in evaluation.correctness[0].detail


def test_runtime_guard_catches_a_dlopen_while_the_candidate_runs(cpu_task, quick: EvalOptions, tmp_path: Path) -> None:
    """With cuBLAS banned, the worker runs under the dlopen guard: a clean kernel passes, a loader does not."""
    import shutil

    from quaere.task.loader import load_task

    folder = tmp_path / "banned"
    shutil.copytree(cpu_task.folder, folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("banned = []", 'banned = ["cublas"]'))
    task = load_task(str(folder))
    clean = run_evaluation(task, cpu_task.initial_kernel, quick)
    assert clean.correct and "guard" not in clean.note, clean.note
    loader = run_evaluation(task, CANDIDATES / "dlopens_cublas.cpp", quick)
    assert {v.verdict for v in loader.correctness} == {Verdict.BANNED_AT_RUNTIME}
    assert "runtime_dlopen" in {f.rule for f in loader.audit}


def test_an_audit_that_could_not_gather_device_symbols_says_so(tmp_path: Path, monkeypatch) -> None:
    """Without cuobjdump the device-symbol rule saw nothing: the record must not read as a clean audit."""
    from quaere.evaluate import EvalOptions, audit_facts, run_evaluation
    from quaere.task.loader import load_task

    monkeypatch.setattr(audit_facts, "find_cuobjdump", lambda: None)
    task = load_task("flash_attention_hopper")
    evaluation = run_evaluation(task, task.initial_kernel, EvalOptions(no_device=True, cache_dir=tmp_path))
    assert evaluation.built and not evaluation.ran
    assert "audit incomplete" in evaluation.note and "cuobjdump" in evaluation.note
