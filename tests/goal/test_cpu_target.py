"""The CPU task's goal target separates a real optimization from noise, over 20 trials of each:

* the unchanged initial kernel reads UNMET every time;
* a kernel doing half the work (twice as fast) reads MET every time.

A trial is what a user does: `quaere eval`, once more if the goal reads UNMET (the goal pools every full evaluation of
a version, so the second does not replace the first: it joins it), then `quaere goal --confirm` for as long as the
goal asks for a confirming evaluation (at most MAX_CONFIRMATIONS), judged by the goal's own ``check_goal`` with the
shipped task's target. The second evaluation is there because one evaluation can be wrong by more than its own error
bar: on a CI virtual machine whose neighbours load the host (no wait for a core, no load this machine could see), one
run of the 2x kernel measured 1.344x +-6.4% (CI of f676cf3, 2026-12-03), where quiet runs measure 1.75-2.06x
(development machine, 12 runs); pooled with a quiet second run (1.8x) its median is 1.57x, clear of the target. The
unchanged kernel gets the same second look, and pooling it only brings it closer to its true 1.0x. Every evaluation is
a real one (the system compiler, the judge, sandboxed runners, the shipped timing rule); to keep this affordable each
is told about one correctness scenario and one benchmark configuration, and the goal is told that those are all the
task has. Successive trials share evaluations (trial i confirms with evaluations i+1, i+2, ...): each is an
independent draw (fresh seed, fresh processes), so sharing changes no trial's odds.

"Twice as fast": the candidate is the shipped initial kernel, timed against a copy of the task whose
initial kernel does the same work twice. Wall-clock timing of ms kernels measures the machine when other
tenants oversubscribe its cores, so the test is skipped, saying so, on a machine loaded beyond its cores.
Tenants outside this machine (a CI host's other virtual machines) do not show in its load average; they show
in the runs' own noise. Short bursts of other work on this machine pass under the load average (it lags a
minute); the judge sees them: a run whose runners waited too long for a core is ``unverified``, and a miss of
which every trial had such a run is skipped, saying so. A missed 2x trial whose runs measured the ratio with a
relative standard error above MAX_RATIO_ERROR is skipped, saying so: at that noise a 1.7x ratio sits within two
standard errors of the 1.2x target, so the goal is right not to call it met. The claim is made for quieter runs,
and a miss on one of those fails the test.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import NamedTuple

import pytest

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.goal import MAX_CONFIRMATIONS, Expected, GoalState, GoalStatus, check_goal, ratio_error
from quaere.goal_render import render_goal
from quaere.records import Evaluation, TimingStatus
from quaere.store.records import EvaluationEntry, RunKind, Starter, TaskIdentity, TrustMode
from quaere.task.loader import Task, load_task

pytestmark = pytest.mark.slow

TRIALS = 20
CONFIG = "bench-r2048-c512"
SCENARIO = {"id": "small", "params": {"rows": 3, "cols": 7, "scale": 1.0, "offset": 0.0}}
PINNED = "p" * 64
MAX_LOAD_PER_CORE = 1.0
CALLER_EVALUATIONS = 2
"""Evaluations a trial's user starts before giving up on an UNMET reading (the module docstring says why)."""
MAX_RATIO_ERROR = 0.12
"""The ratio noise the 2x claim is made for: 1.7 / (1 + MARGIN_K * 0.12) = 1.37, clear of the 1.2x target.
Seen on the 2-core development machine: 0.01-0.21; the CI failure of 2026-12-01 had 0.155."""


def _load_per_core() -> float:
    return os.getloadavg()[0] / (os.cpu_count() or 1)


if _load_per_core() > MAX_LOAD_PER_CORE and not os.environ.get("QUAERE_TIME_ANYWAY"):
    pytestmark = [pytestmark, pytest.mark.skip(
        reason=f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: other processes would be "
               "timed, not the kernels (the claim is for a machine that is not oversubscribed; "
               "QUAERE_TIME_ANYWAY=1 runs it)")]


def twice_as_slow(task: Task, folder: Path) -> Task:
    """A copy of ``task`` whose initial kernel computes its answer twice (the first into the output too)."""
    shutil.copytree(task.folder, folder, ignore=shutil.ignore_patterns("__pycache__"))
    kernel = folder / task.spec.initial_kernel
    source = kernel.read_text().replace('extern "C" int softmax_rows(', "static int once(")
    kernel.write_text(source + '\nextern "C" int softmax_rows(const float* x, float* y, int rows, int cols) {\n'
                      "    const int first = once(x, y, rows, cols);\n"
                      "    return first != 0 ? first : once(x, y, rows, cols);\n}\n")
    return load_task(str(folder))


def entry(evaluation: Evaluation, sequence: int, started_by: Starter) -> EvaluationEntry:
    return EvaluationEntry(sequence=sequence, workspace_id="ws", kind=RunKind.FULL, partial=(),
                           started_by=started_by, trust_mode=TrustMode.SAME_USER,
                           task=TaskIdentity(name="cpu_softmax", reference="cpu_softmax", sha256=PINNED, files=1),
                           evaluation=evaluation)


class Outcome(NamedTuple):
    """One trial: the goal's state, its text, the noisiest ratio among the runs it judged, and whether a run's
    timing was ``unverified`` (the judge found the machine too busy to check the claims)."""

    state: GoalState
    text: str
    ratio_error: float
    too_busy: bool = False


def too_busy(runs: list[Evaluation]) -> bool:
    return any(t.status is TimingStatus.UNVERIFIED for run in runs for result in run.benchmarks for t in result.timings)


def noisiest(runs: list[Evaluation]) -> float:
    """The largest relative standard error of the target ratio among ``runs`` (each run measures its own)."""
    return max(ratio_error(result, "initial") for run in runs for result in run.benchmarks)


def trial(shipped: Task, evaluations: Callable[[int], Evaluation], first: int) -> Outcome:
    """The goal after evaluation ``first``, a second caller's evaluation if it read UNMET, and the
    confirmations it then asks for (evaluations first+1, ...)."""
    expected = Expected(correctness=(SCENARIO["id"],), benchmarks=(CONFIG,))
    entries: list[EvaluationEntry] = []

    def evaluate(started_by: Starter) -> GoalStatus:
        entries.append(entry(evaluations(first + len(entries)), len(entries) + 1, started_by))
        return check_goal(shipped.spec, entries, entries[0].evaluation.candidate_hash, PINNED, expected)

    status = evaluate(Starter.CALLER)
    while status.state is GoalState.UNMET and len(entries) < CALLER_EVALUATIONS:
        status = evaluate(Starter.CALLER)
    confirmations = 0
    while status.state is GoalState.UNCONFIRMED and confirmations < MAX_CONFIRMATIONS:
        confirmations += 1
        status = evaluate(Starter.CONFIRMATION)
    runs = [e.evaluation for e in entries]
    return Outcome(status.state, render_goal(status), noisiest(runs), too_busy(runs))


@pytest.fixture(scope="module")
def shipped() -> Task:
    return load_task("cpu_softmax")


@pytest.fixture(scope="module")
def options(tmp_path_factory: pytest.TempPathFactory) -> EvalOptions:
    folder = tmp_path_factory.mktemp("target")
    scenarios = folder / "scenarios.json"
    scenarios.write_text(json.dumps([SCENARIO]))
    return EvalOptions(scenarios_file=scenarios, benchmark_ids=frozenset({CONFIG}), cache_dir=folder / "cache")


def evaluations_of(task: Task, candidate: Path, options: EvalOptions) -> Callable[[int], Evaluation]:
    """Evaluation number ``i`` of ``candidate`` on ``task``, made on first use."""

    @cache
    def evaluation(index: int) -> Evaluation:
        made = run_evaluation(task, candidate, options)
        assert made.correct and made.benchmarks, made.note
        return made

    return evaluation


def run_trials(shipped: Task, evaluations: Callable[[int], Evaluation]) -> tuple[list[Outcome], float]:
    """Every trial, and the highest load per core seen after one (the load average lags by about a minute,
    so a burst of other work shows up in the trials after it)."""
    outcomes, peak = [], _load_per_core()
    for i in range(TRIALS):
        outcomes.append(trial(shipped, evaluations, i))
        peak = max(peak, _load_per_core())
    return outcomes, peak


def skip_if_loaded(failures: list[Outcome], peak: float) -> None:
    """A failure while other processes oversubscribed the cores measured them, not the kernels: skipped,
    saying so (the claim is for a machine that is not oversubscribed, as at the module's start)."""
    if failures and peak > MAX_LOAD_PER_CORE and not os.environ.get("QUAERE_TIME_ANYWAY"):
        pytest.skip(f"{len(failures)} of {TRIALS} trials failed while the load reached {peak:.1f} per core "
                    f"(over {MAX_LOAD_PER_CORE}); first:\n{failures[0].text}")


def skip_if_too_busy(missed: list[Outcome]) -> None:
    """Misses whose runs the judge itself could not check (waits for a core past twice the CPU-time bound's
    slack: other work shared the cores) measured the machine, as in :func:`skip_if_loaded`, whose load average
    lags by a minute and misses short bursts: skipped, saying so. One miss on a checked run fails the test."""
    if missed and all(m.too_busy for m in missed) and not os.environ.get("QUAERE_TIME_ANYWAY"):
        pytest.skip(f"{len(missed)} of {TRIALS} trials missed, each with a run the judge found too busy to check "
                    f"(unverified); first:\n{missed[0].text}")


def skip_if_noisy(missed: list[Outcome]) -> None:
    """Misses that all judged a run noisier than MAX_RATIO_ERROR measured the machine: skipped, saying so.
    One miss on quieter runs fails the test."""
    if missed and all(m.ratio_error > MAX_RATIO_ERROR for m in missed) and not os.environ.get("QUAERE_TIME_ANYWAY"):
        errors = ", ".join(f"{m.ratio_error:.3f}" for m in missed)
        pytest.skip(f"{len(missed)} of {TRIALS} trials missed, each on a run whose ratio error ({errors}) is "
                    f"above the {MAX_RATIO_ERROR} the claim is made for; first:\n{missed[0].text}")


def test_the_unchanged_initial_kernel_is_unmet_every_time(shipped: Task, options: EvalOptions) -> None:
    evaluations = evaluations_of(shipped, shipped.initial_kernel, options)
    outcomes, peak = run_trials(shipped, evaluations)
    met = [o for o in outcomes if o.state is not GoalState.UNMET]
    skip_if_loaded(met, peak)
    assert not met, f"{len(met)} of {TRIALS} trials not unmet; first:\n{met[0].text if met else ''}"


def test_a_kernel_twice_as_fast_is_met_every_time(shipped: Task, options: EvalOptions, tmp_path: Path) -> None:
    slower = twice_as_slow(shipped, tmp_path / "twice")
    assert slower.spec.goal == shipped.spec.goal and slower.spec.timing == shipped.spec.timing
    evaluations = evaluations_of(slower, shipped.initial_kernel, options)
    outcomes, peak = run_trials(shipped, evaluations)
    missed = [o for o in outcomes if o.state is not GoalState.MET]
    skip_if_loaded(missed, peak)
    skip_if_too_busy(missed)
    skip_if_noisy(missed)
    assert not missed, f"{len(missed)} of {TRIALS} trials not met; first:\n{missed[0].text if missed else ''}"
