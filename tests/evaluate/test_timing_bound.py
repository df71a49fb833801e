"""The timing loop's cost bound: a candidate far slower than the trusted implementations gets fewer
repetitions and says so; an honest one keeps its full count; slowness in the warm-up alone buys nothing.
Fake implementations return their times at once, so only the loop's arithmetic is tested (no timing is
asserted)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from quaere.evaluate.rep_plan import MIN_SLOW_REPS, SLOW_ALLOWANCE, honest_cost_ms, plan_reps
from quaere.evaluate.timing import time_interleaved, to_timing
from quaere.records import TimingStatus
from quaere.task.spec import TimingRule

RULE = TimingRule(warmup_ms=0.0, budget_ms=60.0, min_reps=5, max_reps=40, rounds=3)


@dataclass
class Fake:
    """Calls that take ``ms`` each, except the first ``slow_first`` ones, which take ``first_ms``."""

    name: str
    ms: float
    first_ms: float = 0.0
    slow_first: int = 0
    indices: list[int] = field(default_factory=list)

    def rep(self, index: int) -> float:
        self.indices.append(index)
        return self.first_ms if len(self.indices) <= self.slow_first else self.ms

    @property
    def spent_ms(self) -> float:
        return sum(self.first_ms if i < self.slow_first else self.ms for i in range(len(self.indices)))


def timed(*impls: Fake):
    return {run.name: run for run in time_interleaved(list(impls), RULE, random.Random(3), bounded=("candidate",))}


def test_an_honest_candidate_keeps_the_budgets_repetitions() -> None:
    runs = timed(Fake("candidate", 10.0), Fake("initial", 10.0))
    assert len(runs["candidate"].samples_ms) == 6 and runs["candidate"].note == ""  # ceil(60 / 10)


def test_a_candidate_as_slow_as_the_initial_kernel_on_a_loaded_machine_is_not_cut() -> None:
    """Both take 30 ms a call (a loaded machine): min_reps of them exceed twice the budget, but the
    allowance follows what the initial kernel really costs, so the candidate keeps min_reps."""
    runs = timed(Fake("candidate", 30.0), Fake("initial", 30.0))
    assert len(runs["candidate"].samples_ms) == RULE.min_reps and runs["candidate"].note == ""


def test_a_far_slower_candidate_is_bounded_and_says_so() -> None:
    candidate, initial = Fake("candidate", 100.0), Fake("initial", 10.0)
    runs = timed(candidate, initial)
    allowance = SLOW_ALLOWANCE * honest_cost_ms(RULE, [10.0, 10.0])  # 2 x (20 + 6 x 10) = 160 ms
    run = runs["candidate"]
    # one warm-up call (100 ms), then as many calls as fit in the rest of 160 ms: none, raised to the minimum
    assert len(run.samples_ms) == MIN_SLOW_REPS < RULE.min_reps and len(candidate.indices) == 1 + MIN_SLOW_REPS
    assert "median of 2 repetitions instead of 5" in run.note
    assert candidate.spent_ms <= max(allowance, (1 + MIN_SLOW_REPS) * candidate.ms)
    assert len(runs["initial"].samples_ms) == 6 and runs["initial"].note == ""
    timing = to_timing(run, flops=1e6)
    assert timing.status is TimingStatus.MEASURED and timing.detail == run.note and timing.median_ms == 100.0


def test_a_moderately_slow_candidate_fills_the_allowance() -> None:
    slower = Fake("candidate", 30.0)
    run = timed(slower, Fake("initial", 10.0))["candidate"]
    allowance = SLOW_ALLOWANCE * honest_cost_ms(RULE, [10.0, 10.0])  # 160 ms
    # five 30 ms calls after the first would overrun 160 ms: a single warm-up call, then the four that fit
    assert len(run.samples_ms) == math.floor((allowance - 30.0) / 30.0) == 4 and "4 repetitions" in run.note
    assert len(slower.indices) == 5
    assert slower.spent_ms <= allowance
    assert plan_reps(RULE, 10.0, allowance).note == ""


def test_without_a_trusted_implementation_the_budget_sets_the_allowance() -> None:
    run = timed(Fake("candidate", 100.0))["candidate"]
    assert len(run.samples_ms) == MIN_SLOW_REPS and "far slower" in run.note  # 2 x (0 + 60) ms allowed


def test_a_slow_warm_up_alone_does_not_buy_a_smaller_sample() -> None:
    """A kernel slow on its first call only (it cannot know which calls are timed) gets its full count."""
    sly = Fake("candidate", 10.0, first_ms=500.0, slow_first=1)
    run = timed(sly, Fake("initial", 10.0))["candidate"]
    assert len(run.samples_ms) == 6 and run.note == ""


def test_a_trusted_baseline_is_never_cut_short() -> None:
    """The initial kernel and the comparisons are not bounded: a slow first call (a library's plan
    building) gets the usual two warm-up calls and the rule's count."""
    slow = Fake("initial", 50.0, first_ms=400.0, slow_first=1)
    run = timed(Fake("candidate", 1.0), slow)["initial"]
    assert len(run.samples_ms) == RULE.min_reps and run.note == "" and len(slow.indices) == 2 + RULE.min_reps


def test_a_failure_in_the_warm_up_ends_that_implementation_only() -> None:
    class Broken(Fake):
        def rep(self, index: int) -> float:
            raise RuntimeError("boom")

    runs = timed(Broken("candidate", 1.0), Fake("initial", 10.0))
    assert runs["candidate"].failure == "RuntimeError: boom" and runs["candidate"].samples_ms == []
    assert len(runs["initial"].samples_ms) == 6


def test_a_slow_candidate_through_the_real_evaluator(cpu_task, cache_dir, tmp_path) -> None:
    """A correct candidate that sleeps 150 ms a call (the initial kernel takes a few): timed from fewer
    calls, and the output says so."""
    from rich.console import Console
    from tests.adversarial.test_other_task import sleepy_initial

    from quaere.evaluate import EvalOptions, run_evaluation
    from quaere.evaluate.display import render
    from quaere.evaluate.rep_plan import MIN_SLOW_REPS

    source = tmp_path / "sleepy.cpp"
    source.write_text(sleepy_initial(150))
    scenarios = tmp_path / "one.json"
    scenarios.write_text('[{"id": "small", "params": {"rows": 3, "cols": 7}}]')
    options = EvalOptions(seed=5, scenarios_file=scenarios, cache_dir=cache_dir,
                          benchmark_ids=frozenset({"bench-r8192-c128"}))
    evaluation = run_evaluation(cpu_task, source, options)
    (bench,) = evaluation.benchmarks
    candidate, initial = bench.timing("candidate"), bench.timing("initial")
    assert candidate.status is TimingStatus.MEASURED and initial.status is TimingStatus.MEASURED, candidate.detail
    assert len(candidate.samples_ms) == MIN_SLOW_REPS and "far slower" in candidate.detail
    assert len(initial.samples_ms) >= cpu_task.spec.timing.min_reps and initial.detail == ""
    console = Console(record=True, width=80)
    render(evaluation, console)
    assert "bench-r8192-c128 candidate: far slower than the trusted implementations" in console.export_text()
