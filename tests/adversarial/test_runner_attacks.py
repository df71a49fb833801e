"""Attacks on the evaluator from inside the candidate, on the CPU task (real builds, real runner processes).

Each test names the class of attack and the defence that stops it; each fails when that defence is removed
(the closing notes of the issue record how that was checked).
"""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.clock_bound import waits_resolved
from quaere.records import BenchmarkResult, TimingStatus, Verdict
from quaere.runner.landlock import landlock_abi
from quaere.task.loader import Task, load_task

from .candidates import write_candidate

BENCH = "bench-r2048-c512"


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task("cpu_softmax")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scenarios") / "two.json"
    path.write_text(json.dumps([{"id": "a", "params": {"rows": 3, "cols": 7}},
                                {"id": "b", "params": {"rows": 64, "cols": 100}}]))
    return path


def quick(cache: Path, two: Path) -> EvalOptions:
    return EvalOptions(seed=5, benchmark=False, scenarios_file=two, scenario_timeout_s=10.0, cache_dir=cache)


@pytest.fixture(scope="module")
def one(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small correctness scenario: the timed tests are about the benchmark configuration."""
    path = tmp_path_factory.mktemp("scenarios") / "one.json"
    path.write_text(json.dumps([{"id": "a", "params": {"rows": 3, "cols": 7}}]))
    return path


def timed(cache: Path, one: Path) -> EvalOptions:
    return EvalOptions(seed=5, cache_dir=cache, scenarios_file=one, benchmark_ids=frozenset({BENCH}))


def test_sandbox_is_in_force_and_recorded(task: Task, cache: Path, two: Path) -> None:
    evaluation = run_evaluation(task, task.initial_kernel, quick(cache, two))
    assert evaluation.correct
    assert evaluation.isolation.separate_process and evaluation.isolation.seccomp
    assert not evaluation.isolation.threads_allowed
    assert evaluation.isolation.capabilities_dropped, evaluation.isolation.notes
    assert "capabilities dropped" in evaluation.isolation.summary


def test_candidate_threads_are_a_sandbox_violation(task: Task, cache: Path, two: Path, tmp_path: Path) -> None:
    """Threads could run candidate work outside its timed call or slow the others down: none may start."""
    evaluation = run_evaluation(task, write_candidate(tmp_path, "thread"), quick(cache, two))
    assert {v.verdict for v in evaluation.correctness} == {Verdict.SANDBOX_VIOLATION}
    assert "SIGSYS" in evaluation.correctness[0].detail


def test_where_threads_are_allowed_their_cpu_time_is_no_bound(task: Task, cache: Path, one: Path,
                                                               tmp_path: Path) -> None:
    """With threads allowed the runner's CPU time bounds nothing (threads that live on add up past a call's
    wall time, threads that ended leave /proc uncounted): not measured, no forgery verdict."""
    options = timed(cache, one).model_copy(update={"runner_threads": True})
    evaluation = run_evaluation(task, write_candidate(tmp_path, "thread"), options)
    assert evaluation.correct and evaluation.isolation.threads_allowed
    candidate = evaluation.benchmarks[0].timing("candidate")
    assert candidate.status is TimingStatus.MEASURED, candidate
    assert math.isnan(candidate.cpu_overhead_ms)


def test_a_setsid_child_cannot_be_started(task: Task, cache: Path, two: Path, tmp_path: Path) -> None:
    """A child in its own session would outlive the runner's process group and edit records later."""
    target = tmp_path / "ledger.jsonl"
    target.write_text("genuine\n")
    evaluation = run_evaluation(task, write_candidate(tmp_path, "fork_setsid", target), quick(cache, two))
    assert {v.verdict for v in evaluation.correctness} == {Verdict.SANDBOX_VIOLATION}
    time.sleep(1.5)  # the child would have written by now
    assert target.read_text() == "genuine\n"


needs_landlock = pytest.mark.skipif(landlock_abi() == 0, reason="Landlock is not available on this kernel")


@needs_landlock
def test_files_outside_the_scratch_folder_are_read_only(task: Task, cache: Path, two: Path, tmp_path: Path) -> None:
    target = tmp_path / "ledger.jsonl"
    target.write_text("genuine\n")
    evaluation = run_evaluation(task, write_candidate(tmp_path, "write_outside", target), quick(cache, two))
    assert evaluation.isolation.landlock_abi > 0
    assert evaluation.correct, [v.detail for v in evaluation.correctness]
    assert target.read_text() == "genuine\n"


@needs_landlock
def test_secrets_outside_the_read_roots_cannot_be_read(task: Task, cache: Path, two: Path, tmp_path: Path) -> None:
    secret = tmp_path / "signing-key"
    secret.write_text("private")
    evaluation = run_evaluation(task, write_candidate(tmp_path, "read_secret", secret), quick(cache, two))
    assert evaluation.correct, [v.detail for v in evaluation.correctness]


@needs_landlock
def test_a_folder_named_unreadable_cannot_be_read_even_beneath_a_read_root(task: Task, cache: Path, two: Path,
                                                                          tmp_path: Path, monkeypatch) -> None:
    # The evaluator service's keys lie under /var/lib, a read root, and its runners run as the keys' owner.
    keys = tmp_path / "lib" / "store" / "keys"
    keys.mkdir(parents=True)
    (keys / "private").write_text("private")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path / "lib"))  # each of its folders is a read root
    candidate = write_candidate(tmp_path, "read_secret", keys / "private")
    exposed = run_evaluation(task, candidate, quick(cache, two))
    assert {v.detail for v in exposed.correctness} == {"entry point returned 78"}  # the premise: it is a read root
    guarded = run_evaluation(task, candidate, quick(cache, two).model_copy(update={"unreadable": (keys,)}))
    assert guarded.correct, [v.detail for v in guarded.correctness]


@needs_landlock
def test_a_file_left_in_the_systems_run_lock_cannot_be_read(task: Task, cache: Path, two: Path, tmp_path: Path) -> None:
    """``/run/lock`` (sticky and world-writable like ``/tmp``, beneath the system read root ``/run``) holds what any
    agent left there; this machine has one, and a candidate read a file left there until 2026-12-05."""
    lock = Path("/run/lock")
    if not lock.is_dir() or not lock.stat().st_mode & 0o002:
        pytest.skip("no world-writable /run/lock here")
    blob = lock / f"quaere-test-{os.getpid()}"
    blob.write_text("cubin")
    try:
        evaluation = run_evaluation(task, write_candidate(tmp_path, "read_secret", blob), quick(cache, two))
    finally:
        blob.unlink()
    assert evaluation.correct, [v.detail for v in evaluation.correctness]


@needs_landlock
def test_another_process_cannot_be_read_through_proc(task: Task, cache: Path, two: Path, tmp_path: Path) -> None:
    evaluation = run_evaluation(task, write_candidate(tmp_path, "read_parent_proc"), quick(cache, two))
    assert evaluation.correct, [v.detail for v in evaluation.correctness]


def test_the_judge_survives_a_candidate_that_kills_it(task: Task, cache: Path, two: Path, tmp_path: Path) -> None:
    evaluation = run_evaluation(task, write_candidate(tmp_path, "kill_parent"), quick(cache, two))
    assert [v.verdict for v in evaluation.correctness] == [Verdict.SANDBOX_VIOLATION] * 2


def test_no_helper_channel_no_file_mode_and_no_resizing_of_the_judges_buffers(task: Task, cache: Path, two: Path,
                                                                             tmp_path: Path) -> None:
    """System V IPC, a private file's mode and the judge's memfds, from candidate code on a root runner: each worked
    until 2026-12-05 (a 1.3-1.9x offload to a helper, the store's key made world-readable, the judge killed by
    SIGBUS). The seccomp filter refuses the first two, the buffers are sealed at their size."""
    key = tmp_path / "ed25519.pem"
    key.write_text("private")
    key.chmod(0o600)
    evaluation = run_evaluation(task, write_candidate(tmp_path, "ipc_chmod_truncate", key), quick(cache, two))
    assert Verdict.HARNESS_ERROR not in {v.verdict for v in evaluation.correctness}, evaluation.correctness
    assert evaluation.correct, [(v.verdict, v.detail) for v in evaluation.correctness]
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_the_candidate_cannot_slow_the_judge(task: Task, cache: Path, two: Path, tmp_path: Path) -> None:
    # The judge times the trusted implementations and runs as the candidate's user: a lower priority, one core or
    # the idle class would make them slower on a loaded machine, and the candidate faster by comparison.
    evaluation = run_evaluation(task, write_candidate(tmp_path, "slow_the_judge"), quick(cache, two))
    assert evaluation.correct, [v.detail for v in evaluation.correctness]


def test_python_rewritten_by_the_candidate_cannot_skip_the_work(task: Task, cache: Path, two: Path,
                                                                tmp_path: Path) -> None:
    """The runner's replies are claims: outputs are read in the judge's own mapping."""
    evaluation = run_evaluation(task, write_candidate(tmp_path, "skip_call"), quick(cache, two))
    assert {v.verdict for v in evaluation.correctness} == {Verdict.UNWRITTEN}


def test_a_forged_device_time_is_hidden_work(task: Task, cache: Path, one: Path, tmp_path: Path) -> None:
    """The runner's times are claims the judge bounds with its own clock against the initial kernel."""
    evaluation = run_evaluation(task, write_candidate(tmp_path, "forge_time"), timed(cache, one))
    assert evaluation.correct
    (bench,) = evaluation.benchmarks
    assert bench.timing("initial").status is TimingStatus.MEASURED
    candidate = bench.timing("candidate")
    assert candidate.status is TimingStatus.HIDDEN_WORK, candidate
    assert "forged" in candidate.detail


def test_candidate_code_naming_the_runners_interpreter_fails_the_audit(task: Task, cache: Path, one: Path,
                                                                      tmp_path: Path) -> None:
    """The plain route to forging (weak references to PyRun_SimpleString...) is stopped before any run."""
    evaluation = run_evaluation(task, write_candidate(tmp_path, "forge_plain"), timed(cache, one))
    assert not evaluation.audit_clean and not evaluation.benchmarks
    assert {f.rule for f in evaluation.audit} == {"host_interpreter"}
    assert any("PyRun_SimpleString" in f.evidence for f in evaluation.audit)


def busy(bench: BenchmarkResult, task: Task) -> bool:
    """Whether the runners waited for a core too long for the CPU-time bound to judge by its medians (the
    record's own figures, against the task's absolute slack): the bound then says at most ``unverified``."""
    waits_ms = max(bench.timing(n).cpu_waits_ms for n in ("candidate", "initial"))
    return not math.isnan(waits_ms) and not waits_resolved(waits_ms, task.spec.timing.cpu_abs_ms)


@pytest.mark.parametrize("attack", ["forge_small", "forge_majority"])
def test_forged_claims_are_caught_by_the_runners_cpu_time(attack: str, task: Task, cache: Path, one: Path,
                                                          tmp_path: Path) -> None:
    """``forge_small``: every claim 8% short, inside the wall clock's 10% slack; the kernel's accounting of the
    runner's CPU time and of its waits for a core has no such slack. ``forge_majority``: three claims in five 30%
    short, so the median claim (the reported time) moves by the whole forgery while the other calls stay honest.
    On a quiet machine; on a busy one, see the test below."""
    evaluation = run_evaluation(task, write_candidate(tmp_path, attack), timed(cache, one))
    assert evaluation.correct
    bench = evaluation.benchmarks[0]
    candidate = bench.timing("candidate")
    if busy(bench, task):
        assert candidate.status in (TimingStatus.HIDDEN_WORK, TimingStatus.UNVERIFIED), candidate
    else:
        assert candidate.status is TimingStatus.HIDDEN_WORK, candidate
        assert "CPU time" in candidate.detail


def test_work_done_between_calls_on_inputs_already_written_is_hidden_work(task: Task, cache: Path, one: Path,
                                                                         tmp_path: Path) -> None:
    """The runner's wait for a request, rewritten to compute the next output once the judge has written the
    inputs: the timed call only copies it. A CPU runner blocks between requests, so the CPU time it runs
    there is counted with its next call's."""
    evaluation = run_evaluation(task, write_candidate(tmp_path, "precompute"), timed(cache, one))
    assert evaluation.correct
    candidate = evaluation.benchmarks[0].timing("candidate")
    assert candidate.status is TimingStatus.HIDDEN_WORK, candidate
    assert "between them" in candidate.detail


@pytest.mark.parametrize("honest", ["honest_fast", "honest_twice"])
def test_honest_kernels_faster_or_slower_than_the_initial_one_are_measured(task: Task, cache: Path, one: Path,
                                                                            tmp_path: Path, honest: str) -> None:
    """The other side of every clock bound: a kernel faster (2.5x on the 2-core development machine: shorter
    calls) or 2x slower (longer calls, more waits for a core) than the trusted one, honest, is timed, not
    flagged."""
    evaluation = run_evaluation(task, write_candidate(tmp_path, honest), timed(cache, one))
    assert evaluation.correct
    candidate = evaluation.benchmarks[0].timing("candidate")
    expected = (TimingStatus.MEASURED, TimingStatus.UNVERIFIED) if busy(evaluation.benchmarks[0], task) else \
        (TimingStatus.MEASURED,)
    assert candidate.status in expected, candidate


def test_an_output_cached_by_input_pointer_is_inputs_memoized(
    task: Task, cache: Path, one: Path, tmp_path: Path
) -> None:
    """Every timed call gets new input contents at the same address: a pointer-keyed cache goes stale."""
    evaluation = run_evaluation(task, write_candidate(tmp_path, "memo_pointer"), timed(cache, one))
    assert evaluation.correct
    candidate = evaluation.benchmarks[0].timing("candidate")
    assert candidate.status is TimingStatus.INPUTS_MEMOIZED, candidate


def test_an_output_cached_by_content_gains_nothing(task: Task, cache: Path, one: Path, tmp_path: Path) -> None:
    """Fresh contents every call: a fingerprint cache never hits, so the candidate is timed doing the work."""
    evaluation = run_evaluation(task, write_candidate(tmp_path, "memo_content"), timed(cache, one))
    bench = evaluation.benchmarks[0]
    candidate, initial = bench.timing("candidate"), bench.timing("initial")
    assert candidate.status is TimingStatus.MEASURED and initial.status is TimingStatus.MEASURED
    # With repeated inputs it would copy a cached row block: a hundredfold "speedup". Doing the work, it is
    # the initial kernel's algorithm plus a map lookup: never much faster.
    assert candidate.median_ms > 0.6 * initial.median_ms, (candidate.median_ms, initial.median_ms)


@pytest.fixture
def two_busy_loops() -> Iterator[None]:
    """Two CPU-bound processes beside the evaluation (the development and CI machines have two cores)."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def test_on_a_busy_machine_a_short_claim_is_never_measured_and_an_honest_kernel_never_condemned(
        task: Task, cache: Path, one: Path, tmp_path: Path, two_busy_loops: None) -> None:
    """With two busy loops on two cores the runners wait 1-4 ms a call for a core, in a claim or outside it,
    and the trusted kernel's median (CPU time + waits - claim) jumps by a scheduler slice from run to run: by
    the medians alone `forge_small` passed in 8 of 13 evaluations and an honest kernel was once `hidden_work`
    in six (2026-12-03). The bound now says `unverified` where it cannot place the waits. Last in the file: the
    loops' CPU burst may leave the hypervisor throttling the machine for the tests after it."""
    options = timed(cache, one)
    for seed in (5, 6):
        reseeded = options.model_copy(update={"seed": seed})
        short = run_evaluation(task, write_candidate(tmp_path, "forge_small"), reseeded)
        assert short.benchmarks[0].timing("candidate").status is not TimingStatus.MEASURED
    honest = run_evaluation(task, write_candidate(tmp_path, "honest_fast"), options).benchmarks[0]
    assert honest.timing("candidate").status is not TimingStatus.HIDDEN_WORK, honest.timing("candidate")
    if honest.timing("candidate").status is TimingStatus.UNVERIFIED:
        assert busy(honest, task) and "too busy" in honest.timing("candidate").detail
