"""The ledger survives torn lines and concurrent writers, and reads back what was written."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from quaere.evaluate.ledger import append_evaluation, latest_for_hash, read_ledger
from quaere.records import BuildResult, BuildStatus, DeviceInfo, Evaluation, ScenarioVerdict, Verdict


def make_evaluation(
    candidate_hash: str = "ab" * 32, created_at: float = 1.0, verdict: Verdict = Verdict.PASSED
) -> Evaluation:
    build = BuildResult(status=BuildStatus.OK, command="c++ x", artifact="/tmp/k.so", log_tail="",
                        included_headers=("a.h",), duration_s=0.1)
    return Evaluation(task="cpu_softmax", candidate_path="k.cpp", candidate_hash=candidate_hash, created_at=created_at,
                      device=DeviceInfo(name="cpu:test", sm_clock_mhz=1.0, mem_clock_mhz=2.0), ran=True, build=build,
                      correctness=(ScenarioVerdict(scenario_id="s1", verdict=verdict, seed=3),))


def test_round_trip(tmp_path: Path) -> None:
    ledger = tmp_path / ".quaere" / "ledger.jsonl"
    first, second = make_evaluation(created_at=1.0), make_evaluation(created_at=2.0, verdict=Verdict.WRONG)
    append_evaluation(ledger, first)
    append_evaluation(ledger, second)
    read = read_ledger(ledger)
    assert read.problems == ()
    assert read.evaluations == (first, second)
    assert latest_for_hash(read, "ab" * 32) == second
    assert latest_for_hash(read, "cd" * 32) is None
    assert latest_for_hash(read, "ab" * 32, task="other") is None


def test_missing_ledger_reads_empty(tmp_path: Path) -> None:
    read = read_ledger(tmp_path / "none.jsonl")
    assert read.evaluations == () and read.problems == ()


def test_torn_last_line_is_reported_and_the_next_append_starts_clean(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    append_evaluation(ledger, make_evaluation(created_at=1.0))
    with open(ledger, "a") as f:
        f.write('{"schema_version": 1, "task": "cpu_sof')  # a writer killed mid-line
    read = read_ledger(ledger)
    assert len(read.evaluations) == 1 and len(read.problems) == 1 and ":2:" in read.problems[0]
    append_evaluation(ledger, make_evaluation(created_at=3.0))
    read = read_ledger(ledger)
    assert [e.created_at for e in read.evaluations] == [1.0, 3.0] and len(read.problems) == 1


def test_a_line_of_another_shape_is_reported_not_fatal(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text('{"task": "x"}\n')
    append_evaluation(ledger, make_evaluation())
    read = read_ledger(ledger)
    assert len(read.evaluations) == 1 and "record 1" in read.problems[0]


def _writer(args: tuple[str, int, int]) -> None:
    path, worker, count = args
    for index in range(count):
        append_evaluation(Path(path), make_evaluation(candidate_hash=f"{worker:02d}" * 32, created_at=float(index)))


def test_concurrent_appends_from_processes_all_land_whole(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    workers, count = 4, 25
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        pool.map(_writer, [(str(ledger), w, count) for w in range(workers)])
    read = read_ledger(ledger)
    assert read.problems == ()
    assert len(read.evaluations) == workers * count
    for worker in range(workers):
        mine = [e.created_at for e in read.evaluations if e.candidate_hash == f"{worker:02d}" * 32]
        assert mine == [float(i) for i in range(count)]  # each writer's records whole and in order
