"""The candidate's timed outputs beyond the sample: its inputs checked unchanged after every call, and its
whole output on a secret schedule (one of the first three calls always, then a share of the rest)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from tests.evaluate.conftest import CANDIDATES

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.timed_checks import FIRST_WITHIN, FullCheckSchedule
from quaere.records import TimingStatus
from quaere.task.loader import Task

CONFIG = "bench-r8192-c128"


def due_calls(schedule: FullCheckSchedule, calls: int) -> list[int]:
    return [ordinal for ordinal in range(calls) if schedule.due()]


def test_one_of_the_first_calls_is_always_checked_whole_and_none_later_without_a_share() -> None:
    firsts = set()
    for seed in range(60):
        checked = due_calls(FullCheckSchedule(0.0, random.Random(seed)), 50)
        assert len(checked) == 1 and checked[0] < FIRST_WITHIN
        firsts.add(checked[0])
    assert firsts == set(range(FIRST_WITHIN))  # the forced call is not always the same one


def test_the_share_sets_how_many_later_calls_are_checked() -> None:
    assert due_calls(FullCheckSchedule(1.0, random.Random(0)), 40) == list(range(40))
    checked = due_calls(FullCheckSchedule(0.25, random.Random(1)), 4000)
    assert 850 < len(checked) < 1150  # ~1000 expected, plus the forced one; binomial sd ~27


def test_the_default_schedule_is_not_derived_from_a_seed() -> None:
    firsts = {FullCheckSchedule(0.5).first for _ in range(60)}
    assert len(firsts) > 1 and isinstance(FullCheckSchedule(0.5).rng, random.SystemRandom)


def timed(task: Task, source: str, options: EvalOptions, share: float | None = None):
    if share is not None:
        timing = task.spec.timing.model_copy(update={"full_check_share": share})
        task = dataclasses.replace(task, spec=task.spec.model_copy(update={"timing": timing}))
    update = {"benchmark": True, "benchmark_ids": frozenset({CONFIG})}
    evaluation = run_evaluation(task, CANDIDATES / source, options.model_copy(update=update))
    assert all(v.verdict.passed for v in evaluation.correctness)
    return evaluation.benchmarks[0]


def test_one_wrong_element_on_later_timed_calls_fails_the_whole_check(cpu_task: Task, quick: EvalOptions) -> None:
    bench = timed(cpu_task, "wrong_late_when_timed.cpp", quick, share=1.0)
    candidate = bench.timing("candidate")
    assert candidate.status is TimingStatus.FAILED, candidate.detail
    assert ("whole output checked" in candidate.detail
            and "differs from the reference of its own inputs" in candidate.detail)
    assert bench.timing("initial").status is TimingStatus.MEASURED


def test_inputs_changed_by_a_timed_call_fail_its_timing(cpu_task: Task, quick: EvalOptions) -> None:
    bench = timed(cpu_task, "writes_input_when_timed.cpp", quick)
    candidate = bench.timing("candidate")
    assert candidate.status is TimingStatus.FAILED
    assert "modified its input(s) x" in candidate.detail


def test_an_honest_candidate_passes_every_whole_check(cpu_task: Task, quick: EvalOptions, tmp_path: Path) -> None:
    bench = timed(cpu_task, "prints_to_stdout.cpp", quick, share=1.0)
    assert bench.timing("candidate").status is TimingStatus.MEASURED, bench.timing("candidate").detail
