"""The goal's records and constants: its states, what falls short and why, and the margin rule.

See :mod:`quaere.goal` for the predicate; :mod:`quaere.goal_judging` judges runs into these records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from pydantic import Field

from quaere.records import Evaluation, Record, Verdict
from quaere.store.records import PartialReason

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

def lower_bound(ratio: float, error: float) -> float:
    """The ratio with its margin taken off: ``ratio / (1 + MARGIN_K * error)`` (see MARGIN_K)."""
    return ratio / (1.0 + MARGIN_K * error)
