"""A clock-bound flag on one timed run is answered by a second run on new inputs: the verdict and the
samples are the second run's. Fake implementations record the indices they were called with and report a
time per run; the judge is a stand-in that flags what the test says (no timing is asserted)."""

from __future__ import annotations

from dataclasses import dataclass, field

from quaere.evaluate.clock_bound import Doubt
from quaere.evaluate.second_look import SECOND_RUN_FIRST_INDEX, time_and_judge
from quaere.evaluate.timing import Run, TimingFailure
from quaere.records import TimingStatus
from quaere.task.spec import TimingRule

RULE = TimingRule(warmup_ms=0.0, budget_ms=20.0, min_reps=5, max_reps=10, rounds=2)


@dataclass
class Fake:
    """Calls that take 1 ms in the first run and 2 ms in the second (so a test can tell whose samples it
    got); ``fail`` raises on the first call."""

    name: str
    fail: bool = False
    indices: list[int] = field(default_factory=list)

    def rep(self, index: int) -> float:
        self.indices.append(index)
        if self.fail:
            raise TimingFailure(TimingStatus.INPUTS_MEMOIZED, "repeats an earlier output")
        return 2.0 if index >= SECOND_RUN_FIRST_INDEX else 1.0


@dataclass
class Judge:
    """Flags the names in ``runs_flagged[k]`` on its k-th call; counts the resets between calls."""

    runs_flagged: list[set[str]]
    calls: int = 0
    resets: int = 0

    status: TimingStatus = TimingStatus.HIDDEN_WORK

    def __call__(self, runs: list[Run]) -> dict[str, Doubt]:
        flagged = self.runs_flagged[self.calls] if self.calls < len(self.runs_flagged) else set()
        self.calls += 1
        return {run.name: Doubt(self.status, f"flag {self.calls}") for run in runs
                if run.name in flagged and not run.failure}

    def reset(self) -> None:
        self.resets += 1


def timed(impls: list[Fake], judge: Judge) -> dict[str, Run]:
    runs = time_and_judge(impls, RULE, 7, ("candidate",), judge, judge.reset)
    return {run.name: run for run in runs}


def test_no_flag_means_one_run() -> None:
    candidate, initial = Fake("candidate"), Fake("initial")
    judge = Judge([set()])
    runs = timed([candidate, initial], judge)
    assert judge.calls == 1 and judge.resets == 0
    assert runs["candidate"].status is TimingStatus.MEASURED and set(runs["candidate"].samples_ms) == {1.0}
    assert max(candidate.indices) < SECOND_RUN_FIRST_INDEX and runs["candidate"].note == ""


def test_a_flag_that_does_not_repeat_reports_the_second_run_with_a_note() -> None:
    candidate, initial, fa3 = Fake("candidate"), Fake("initial"), Fake("fa3")
    judge = Judge([{"candidate"}, set()])
    runs = timed([candidate, initial, fa3], judge)
    assert judge.calls == 2 and judge.resets == 1
    for name in ("candidate", "initial", "fa3"):  # every implementation's samples come from the same run
        assert runs[name].status is TimingStatus.MEASURED and set(runs[name].samples_ms) == {2.0}, name
        assert "first run's clock bound flagged candidate: flag 1" in runs[name].note
    # The second run's inputs are new: no index of the first run comes back.
    first = [i for i in candidate.indices if i < SECOND_RUN_FIRST_INDEX]
    second = [i for i in candidate.indices if i >= SECOND_RUN_FIRST_INDEX]
    assert first and second and not set(first) & set(second)


def test_a_flag_that_repeats_is_hidden_work() -> None:
    runs = timed([Fake("candidate"), Fake("initial")], Judge([{"candidate"}, {"candidate"}]))
    assert runs["candidate"].status is TimingStatus.HIDDEN_WORK
    assert "flag 2" in runs["candidate"].failure and "first run" in runs["candidate"].failure
    assert runs["initial"].status is TimingStatus.MEASURED


def test_a_flag_only_in_the_second_run_is_hidden_work() -> None:
    # Forging only once the first run has been dropped gains nothing: the second run is judged the same way.
    runs = timed([Fake("candidate"), Fake("initial")], Judge([{"initial"}, {"candidate"}]))
    assert runs["candidate"].status is TimingStatus.HIDDEN_WORK
    assert runs["initial"].status is TimingStatus.MEASURED


def test_a_timer_failure_in_the_first_run_stands_and_is_not_timed_again() -> None:
    memo = Fake("candidate", fail=True)
    judge = Judge([{"initial"}, set()])
    runs = timed([memo, Fake("initial")], judge)
    assert runs["candidate"].status is TimingStatus.INPUTS_MEMOIZED
    assert all(i < SECOND_RUN_FIRST_INDEX for i in memo.indices) and len(memo.indices) == 1
    assert runs["initial"].status is TimingStatus.MEASURED and set(runs["initial"].samples_ms) == {2.0}


def test_a_run_the_judge_could_not_check_twice_is_unverified_not_hidden_work() -> None:
    """A busy machine can leave the CPU-time bound unable to check the claims: that doubt, in both runs, is the
    verdict (``unverified``), and an implementation it never doubted stays measured."""
    judge = Judge([{"candidate"}, {"candidate"}], status=TimingStatus.UNVERIFIED)
    runs = timed([Fake("candidate"), Fake("initial")], judge)
    assert runs["candidate"].status is TimingStatus.UNVERIFIED and "flag 2" in runs["candidate"].failure
    assert runs["initial"].status is TimingStatus.MEASURED and set(runs["initial"].samples_ms) == {2.0}
