"""The goal: a predicate over the full evaluations of the current candidate, checked per scenario.

Only entries of the signed store count, and of those only *full* evaluations (the pinned task's own
scenarios, a seed the evaluator drew, every benchmark timed) of the pinned task and of the current
file's content hash. Partial runs are shown, never counted. Every full evaluation of this version is
pooled: a lucky run does not replace an unlucky one, so re-running an unchanged kernel converges to its
true speed instead of drawing until one run looks fast.

MET needs, on the pooled runs and again on a confirming evaluation that quaere itself starts:

* every correctness scenario passed (in every full run: a kernel that fails once is wrong);
* every benchmark configuration a goal target matches has ``median ratio / (1 + MARGIN_K * error) >=
  target``, where ``error`` is the ratio's relative standard error measured in each run (median over the
  runs): the candidate's time raised and the baseline's lowered by MARGIN_K standard errors;
* nothing ran faster than the roofline floor, and every baseline was timed.

When everything holds but no confirmation has, the state is ``UNCONFIRMED``: the caller (the Stop hook,
``quaere goal --confirm``, ``quaere run``) starts one. Never an average across scenarios, never a model's
opinion. Text rendering is in :mod:`quaere.goal_render`.
"""

from __future__ import annotations

import fnmatch
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from pydantic import Field

from quaere.records import BenchmarkResult, Evaluation, Record, Timing, TimingStatus, Verdict
from quaere.store.records import EvaluationEntry, PartialReason, Starter
from quaere.task.spec import GoalTarget, TaskSpec

MARGIN_K = 2.0
"""How many standard errors a configuration's ratio must clear its target by. The standard error of a
median of n samples is about 1.2533 sigma / sqrt(n), with sigma about IQR / 1.349 for normal samples, so
0.93 IQR / sqrt(n); a ratio's relative error is its two medians' relative errors in quadrature. With two
of them a kernel that equals its baseline clears a 1.0x target in about 2 % of runs per configuration,
before the pooling and the confirmation; an honest kernel pays only its measured noise (0.3-3.5 % IQR
with 60 samples on the H200 task: a margin under 1 %). The margin divides (``ratio / (1 + k e)``) rather
than subtracts, so on a loaded machine, where a median's error can exceed the median itself, a kernel
ten times faster than its target still passes instead of getting a negative bound."""

SE_PER_IQR = 1.2533 / 1.349  # standard error of a median, per IQR, times sqrt(n): see MARGIN_K

MAX_CONFIRMATIONS = 3
"""Confirming evaluations quaere starts for one version; after that its speed is called not reproducible."""


class GoalState(str, Enum):
    MET = "met"
    UNMET = "unmet"
    UNCONFIRMED = "unconfirmed"  # holds on the pooled runs; a confirming evaluation must hold too
    STALE = "stale"  # the current file was never evaluated, other versions were: it changed since
    NO_EVALUATION = "no_evaluation"


class Shortfall(str, Enum):
    """Why one benchmark configuration does not count as reaching its target."""

    BELOW_TARGET = "below_target"
    WITHIN_MARGIN = "within_margin"  # at or above target, but not by MARGIN_K standard errors
    BASELINE_UNAVAILABLE = "baseline_unavailable"  # e.g. FA3 not installed: a skip is not a pass
    CANDIDATE_NOT_TIMED = "candidate_not_timed"  # crashed, hung or failed while timed
    NOT_BENCHMARKED = "not_benchmarked"  # no full evaluation holds a timing of this configuration
    FASTER_THAN_ROOFLINE = "faster_than_roofline"  # timed below the physical floor: the number is not credible


class FailingScenario(Record):
    """A correctness scenario that did not pass (in the latest full run where it failed)."""

    scenario_id: str
    verdict: Verdict
    detail: str = ""


class FailingBenchmark(Record):
    """A benchmark configuration that does not reach one of its targets."""

    scenario_id: str
    baseline: str
    target_ratio: float
    ratio: float = Field(description="Median over the pooled runs of the speedup; NaN when not measured.")
    ratio_error: float = Field(
        description="Median over the pooled runs of the ratio's relative standard error (0.02 = 2 %); NaN if unknown."
    )
    shortfall: Shortfall
    runs: int = Field(default=0, description="Full evaluations pooled for this configuration.")
    detail: str = ""

    @property
    def lower_ratio(self) -> float:
        """The ratio less its margin: what must reach the target."""
        return lower_bound(self.ratio, self.ratio_error)


class PartialRun(Record):
    """A partial evaluation of the current version: shown to say why it does not count."""

    created_at: float
    reasons: tuple[PartialReason, ...]


class GoalStatus(Record):
    """Outcome of the goal check, with every failing item and its numbers."""

    state: GoalState
    candidate_hash: str
    evaluated_hash: str = Field(default="", description="Hash of the evaluations judged ('' when none).")
    evaluated_at: float = Field(default=math.nan, description="Unix time of the latest full evaluation judged.")
    full_runs: int = Field(default=0, description="Full evaluations of this version pooled.")
    confirmations: int = Field(default=0, description="Confirming evaluations quaere ran for this version.")
    problems: tuple[str, ...] = Field(default=(), description="Build, audit, run or store failures.")
    failing_scenarios: tuple[FailingScenario, ...] = ()
    failing_benchmarks: tuple[FailingBenchmark, ...] = ()
    confirmation_misses: tuple[FailingBenchmark, ...] = Field(
        default=(), description="Where the latest confirming evaluation fell short, judged on its own."
    )
    partial_runs: tuple[PartialRun, ...] = Field(default=(), description="Partial runs of this version: not counted.")
    scenarios_checked: int = 0
    benchmarks_checked: int = 0

    @property
    def met(self) -> bool:
        return self.state is GoalState.MET


def is_timing_only(evaluation: Evaluation) -> bool:
    """A re-timing run: it built and ran, timed some configurations and checked no correctness."""
    return evaluation.built and evaluation.ran and not evaluation.correctness and bool(evaluation.benchmarks)


@dataclass(frozen=True)
class Expected:
    """The pinned task's scenario ids (None where the task cannot list them here)."""

    correctness: tuple[str, ...] | None = None
    benchmarks: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Verdicts:
    """What one judgement of a set of full runs found."""

    problems: tuple[str, ...]
    failing_scenarios: tuple[FailingScenario, ...]
    failing_benchmarks: tuple[FailingBenchmark, ...]
    benchmarks_checked: int

    @property
    def holds(self) -> bool:
        return not (self.problems or self.failing_scenarios or self.failing_benchmarks)


# -- one run's numbers ----------------------------------------------------------------------------------


def _relative_error(timing: Timing) -> float:
    """Relative standard error of one implementation's median time (NaN when it cannot be told)."""
    count = sum(1 for v in timing.samples_ms if math.isfinite(v))
    if not (timing.median_ms > 0) or not math.isfinite(timing.spread_ms) or count < 1:
        return math.nan
    return SE_PER_IQR * timing.spread_ms / math.sqrt(count) / timing.median_ms


def ratio_error(result: BenchmarkResult, baseline: str) -> float:
    """Relative standard error of the ratio: both medians' relative errors in quadrature (NaN if unknown)."""
    parts = []
    for timing in (result.timing("candidate"), result.timing(baseline)):
        parts.append(_relative_error(timing) if timing is not None else math.nan)
    return math.hypot(*parts)


def lower_bound(ratio: float, error: float) -> float:
    """The ratio with its margin taken off: ``ratio / (1 + MARGIN_K * error)`` (see MARGIN_K)."""
    return ratio / (1.0 + MARGIN_K * error)


def _unmeasured(timing: Timing | None) -> str:
    if timing is None:
        return "not timed"
    return f"{timing.status.value}{': ' + timing.detail if timing.detail else ''}"


def _hard_shortfall(result: BenchmarkResult, baseline: str) -> tuple[Shortfall, str] | None:
    """A reason this run's timing of the configuration cannot count at all, else None."""
    candidate, base = result.timing("candidate"), result.timing(baseline)
    if candidate is None or candidate.status is not TimingStatus.MEASURED:
        return Shortfall.CANDIDATE_NOT_TIMED, f"candidate {_unmeasured(candidate)}"
    if base is None or base.status is not TimingStatus.MEASURED:
        return Shortfall.BASELINE_UNAVAILABLE, f"baseline '{baseline}' {_unmeasured(base)}"
    if result.suspect:
        return Shortfall.FASTER_THAN_ROOFLINE, (
            f"candidate median {candidate.median_ms:.4g} ms is below the roofline floor {result.bound_ms:.4g} ms"
        )
    return None


# -- pooled judgements ----------------------------------------------------------------------------------


def judge_configuration(results: Sequence[BenchmarkResult], target: GoalTarget) -> FailingBenchmark | None:
    """One configuration over the runs that timed it: None when it reaches ``target`` with its margin."""
    base = dict(scenario_id=results[0].scenario_id, baseline=target.baseline, target_ratio=target.ratio,
                runs=len(results))
    for result in reversed(results):
        hard = _hard_shortfall(result, target.baseline)
        if hard is not None:
            ratio = result.ratio(target.baseline)
            return FailingBenchmark(**base, ratio=ratio, ratio_error=math.nan, shortfall=hard[0], detail=hard[1])
    ratios = [r.ratio(target.baseline) for r in results]
    ratio = statistics.median(ratios)
    errors = [ratio_error(r, target.baseline) for r in results]
    error = statistics.median(errors) if all(math.isfinite(e) for e in errors) else math.nan
    if not ratio >= target.ratio:
        return FailingBenchmark(**base, ratio=ratio, ratio_error=error, shortfall=Shortfall.BELOW_TARGET)
    if not lower_bound(ratio, error) >= target.ratio:
        detail = "error unknown" if not math.isfinite(error) else ""
        return FailingBenchmark(
            **base, ratio=ratio, ratio_error=error, shortfall=Shortfall.WITHIN_MARGIN, detail=detail
        )
    return None


def _run_problems(evaluation: Evaluation) -> list[str]:
    if not evaluation.built:
        last = (evaluation.build.log_tail.strip().splitlines() or ["(no log)"])[-1]
        return [f"build failed: {last}"]
    problems = [f"audit: {f.rule}: {f.evidence}" for f in evaluation.audit]
    if not evaluation.ran:
        problems.append(f"{NOTHING_MEASURED}: {not_run_reason(evaluation)}")
    elif not evaluation.correctness:
        problems.append("no correctness scenario was run")
    return problems


NOTHING_MEASURED = "nothing could be measured"


def not_run_reason(evaluation: Evaluation) -> str:
    """Why an evaluation that built ran nothing (no device), as the evaluator said it."""
    detail = next((v.detail for v in evaluation.correctness if v.detail), "") or evaluation.note
    return detail.removesuffix(": nothing was run") or "no device"


def judge_correctness(runs: Sequence[Evaluation], expected: Sequence[str] | None) -> tuple[list[str], list[FailingScenario]]:
    """Problems (build, audit, nothing run) and failing scenarios over every run; the latest failure of each
    scenario is the one shown."""
    problems: list[str] = []
    failing: dict[str, FailingScenario] = {}
    for run in runs:
        problems += [p for p in _run_problems(run) if p not in problems]
        # A run that executed nothing has no failing scenario: its problem says it measured nothing.
        for verdict in run.failing() if run.ran else ():
            failing[verdict.scenario_id] = FailingScenario(
                scenario_id=verdict.scenario_id, verdict=verdict.verdict, detail=verdict.detail
            )
    seen = {v.scenario_id for run in runs for v in run.correctness}
    for scenario_id in expected or ():
        if scenario_id not in seen and runs and runs[-1].ran:
            failing[scenario_id] = FailingScenario(
                scenario_id=scenario_id, verdict=Verdict.NOT_RUN, detail="missing from the evaluation"
            )
    return problems, list(failing.values())


def judge_benchmarks(
    spec: TaskSpec, runs: Sequence[Evaluation], expected: Sequence[str] | None
) -> tuple[list[str], list[FailingBenchmark], int]:
    """(problems, failing configurations, target checks made) over the runs that timed anything."""
    timed = [r for r in runs if r.built and r.ran and r.benchmarks]
    ids = list(expected) if expected is not None else list(dict.fromkeys(b.scenario_id for r in timed for b in r.benchmarks))
    problems: list[str] = []
    failing: list[FailingBenchmark] = []
    checked = 0
    for target in spec.goal.targets:
        matched = [i for i in ids if fnmatch.fnmatchcase(i, target.scenarios)]
        if not matched:
            problems.append(f"goal target '{target.scenarios}' vs {target.baseline} matches no timed configuration")
        for scenario_id in matched:
            checked += 1
            results = [b for r in timed for b in r.benchmarks if b.scenario_id == scenario_id]
            if not results:
                failing.append(FailingBenchmark(
                    scenario_id=scenario_id, baseline=target.baseline, target_ratio=target.ratio, ratio=math.nan,
                    ratio_error=math.nan, shortfall=Shortfall.NOT_BENCHMARKED,
                    detail="no full evaluation holds a timing of this configuration",
                ))
            elif (miss := judge_configuration(results, target)) is not None:
                failing.append(miss)
    return problems, failing, checked


def judge_runs(spec: TaskSpec, runs: Sequence[Evaluation], expected: Expected) -> Verdicts:
    """Correctness and benchmarks over ``runs`` pooled (the evaluator times only a correct candidate)."""
    problems, failing = judge_correctness(runs, expected.correctness)
    benchmarks: list[FailingBenchmark] = []
    checked = 0
    if any(r.built and r.ran and r.benchmarks for r in runs):
        more, benchmarks, checked = judge_benchmarks(spec, runs, expected.benchmarks)
        problems += more
    elif not failing and not problems:
        problems.append("no benchmark configuration was timed")
    elif failing and all(r.built and r.ran for r in runs):
        # The evaluator times only a correct candidate: one line says so, rather than one per configuration.
        problems.append("benchmarks not timed: every correctness scenario must pass first")
    return Verdicts(tuple(problems), tuple(failing), tuple(benchmarks), checked)


# -- the goal -------------------------------------------------------------------------------------------


def _counted(entry: EvaluationEntry, candidate_hash: str, pinned_sha256: str) -> bool:
    return entry.full and entry.task.sha256 == pinned_sha256 and entry.evaluation.candidate_hash == candidate_hash


def _empty_status(entries: Sequence[EvaluationEntry], candidate_hash: str) -> GoalStatus:
    """No full evaluation of this version: never evaluated, changed since, or only partial runs."""
    mine = [e for e in entries if e.evaluation.candidate_hash == candidate_hash]
    if not entries:
        return GoalStatus(state=GoalState.NO_EVALUATION, candidate_hash=candidate_hash)
    if not mine:  # other versions were evaluated, this file never: its verdict cannot be borrowed
        latest = entries[-1].evaluation
        return GoalStatus(state=GoalState.STALE, candidate_hash=candidate_hash,
                          evaluated_hash=latest.candidate_hash, evaluated_at=latest.created_at)
    return GoalStatus(
        state=GoalState.UNMET, candidate_hash=candidate_hash, evaluated_hash=candidate_hash,
        evaluated_at=mine[-1].evaluation.created_at,
        problems=("no full evaluation of this version on the pinned task: partial runs never count; "
                  "run `quaere eval` without --scenarios, --seed, --no-benchmark or --task",),
        partial_runs=tuple(PartialRun(created_at=e.evaluation.created_at, reasons=e.partial) for e in mine),
    )


def _state(pooled: Verdicts, confirmations: Sequence[Verdicts]) -> tuple[GoalState, tuple[str, ...]]:
    if not pooled.holds:
        return GoalState.UNMET, ()
    if any(c.holds for c in confirmations):
        return GoalState.MET, ()
    if len(confirmations) >= MAX_CONFIRMATIONS:
        return GoalState.UNMET, (
            f"{len(confirmations)} confirming evaluations of this version did not hold: its speed is not "
            "reproducible; change the kernel",
        )
    return GoalState.UNCONFIRMED, ()


def check_goal(
    spec: TaskSpec,
    entries: Sequence[EvaluationEntry],
    candidate_hash: str,
    pinned_sha256: str,
    expected: Expected = Expected(),
    store_problems: Sequence[str] = (),
) -> GoalStatus:
    """Judge the goal of ``spec`` for the file whose content hash is ``candidate_hash`` (pure).

    ``entries`` are the verified store entries in order; ``pinned_sha256`` the task pinned at init.
    ``store_problems`` (tampered lines) withhold MET: a store with holes cannot be judged.
    """
    counted = [e for e in entries if _counted(e, candidate_hash, pinned_sha256)]
    if not counted:
        return _empty_status(entries, candidate_hash)
    runs = [e.evaluation for e in counted]
    pooled = judge_runs(spec, runs, expected)
    confirming = [e.evaluation for e in counted if e.started_by is Starter.CONFIRMATION]
    confirmations = [judge_runs(spec, [run], expected) for run in confirming]
    state, more = _state(pooled, confirmations)
    problems = (*pooled.problems, *more, *(f"store: {p}" for p in store_problems))
    if store_problems and state in (GoalState.MET, GoalState.UNCONFIRMED):
        state = GoalState.UNMET
    latest_full = counted[-1].evaluation.created_at
    partial = [e for e in entries if e.evaluation.candidate_hash == candidate_hash and not e.full
               and e.evaluation.created_at >= latest_full]
    return GoalStatus(
        state=state,
        candidate_hash=candidate_hash,
        evaluated_hash=candidate_hash,
        evaluated_at=latest_full,
        full_runs=len(runs),
        confirmations=len(confirming),
        problems=problems,
        failing_scenarios=pooled.failing_scenarios,
        failing_benchmarks=pooled.failing_benchmarks,
        confirmation_misses=confirmations[-1].failing_benchmarks if confirmations and state is not GoalState.MET else (),
        partial_runs=tuple(PartialRun(created_at=e.evaluation.created_at, reasons=e.partial) for e in partial),
        scenarios_checked=max((len(r.correctness) for r in runs), default=0),
        benchmarks_checked=pooled.benchmarks_checked,
    )
