"""The correctness rule, as pure functions over numbers the worker measured on the arrays.

An output passes when it was entirely written, holds no NaN, has Inf exactly where the fp32 reference has
it (e.g. ``lse = -inf`` on a fully masked row), and its largest absolute error against the fp32 reference
(over the reference's finite positions) is at most ``factor * low_precision_err + floor``, where
``low_precision_err`` is that same error for the task's low-precision reference. A scenario also checks
itself: null candidates (all zeros, a copy of an input) must fail it, else it proves nothing and is
``harness_weak``.
"""

from __future__ import annotations

from dataclasses import dataclass

from quaere.records import OutputError, ScenarioVerdict, Verdict


@dataclass(frozen=True)
class ErrorStats:
    """How one array compares with a reference, as measured by ``ArrayOps.compare``."""

    max_abs_err: float
    """max |array - reference| over positions where both are finite (0 when there are none)."""
    nonfinite_mismatch: int
    """Positions where the reference is non-finite and the array differs, or the reference is finite and
    the array is not."""
    nan_count: int
    """NaN elements of the array (poison excluded by the caller's ordering: unwritten is checked first)."""


@dataclass(frozen=True)
class Rule:
    factor: float
    floor: float

    def bound(self, low_precision_err: float) -> float:
        return self.factor * low_precision_err + self.floor


@dataclass(frozen=True)
class OutputCheck:
    """Everything measured on one output of one call."""

    name: str
    numel: int
    poison_left: int
    guards_intact: bool
    error: ErrorStats
    """Candidate against the fp32 reference."""
    low: ErrorStats
    """Low-precision reference against the fp32 reference."""


@dataclass(frozen=True)
class CallFacts:
    """Facts of one candidate call that do not depend on a particular output."""

    status_code: int
    modified_inputs: tuple[str, ...] = ()
    banned_loaded: tuple[str, ...] = ()


def judge_error(name: str, error: ErrorStats, low: ErrorStats, rule: Rule) -> tuple[Verdict, OutputError, str]:
    """Verdict of one output's values (written-ness is judged before this)."""
    bound = rule.bound(low.max_abs_err)
    record = OutputError(name=name, max_abs_err=error.max_abs_err, low_precision_err=low.max_abs_err, bound=bound)
    if error.nan_count:
        return Verdict.NONFINITE, record, f"{name}: {error.nan_count} NaN element(s)"
    if error.nonfinite_mismatch:
        return (
            Verdict.NONFINITE,
            record,
            (
                f"{name}: {error.nonfinite_mismatch} element(s) non-finite where the fp32 reference is not, or "
                "differing from its Inf"
            ),
        )
    if not (error.max_abs_err <= bound):  # also catches a NaN error
        return (
            Verdict.WRONG,
            record,
            (
                f"{name}: max abs error {error.max_abs_err:.3e} > bound {bound:.3e} "
                f"({rule.factor:g} x low-precision error {low.max_abs_err:.3e} + floor {rule.floor:.1e})"
            ),
        )
    return Verdict.PASSED, record, ""


def passes(stats: dict[str, tuple[ErrorStats, ErrorStats]], rule: Rule) -> bool:
    """Whether values with these (error, low) stats per output would pass: used for null candidates."""
    return all(judge_error(name, e, low, rule)[0] is Verdict.PASSED for name, (e, low) in stats.items())


def judge_scenario(
    scenario_id: str,
    seed: int,
    facts: CallFacts,
    outputs: tuple[OutputCheck, ...],
    passing_nulls: tuple[str, ...],
    rule: Rule,
    duration_s: float = 0.0,
) -> ScenarioVerdict:
    """The scenario's verdict: the first failure in a fixed order, else the null self-test, else PASSED.

    Order: banned library at run time, nonzero status, guard bytes, inputs, unwritten elements, then the
    values of each output. ``passing_nulls`` names the null candidates that would have passed.
    """

    def verdict(v: Verdict, detail: str, errors: tuple[OutputError, ...] = ()) -> ScenarioVerdict:
        return ScenarioVerdict(
            scenario_id=scenario_id, verdict=v, seed=seed, errors=errors, detail=detail, duration_s=duration_s
        )

    if facts.banned_loaded:
        return verdict(Verdict.BANNED_AT_RUNTIME, f"loaded while the candidate ran: {', '.join(facts.banned_loaded)}")
    if facts.status_code != 0:
        return verdict(Verdict.UNSUPPORTED, f"entry point returned {facts.status_code}")
    corrupted = [o.name for o in outputs if not o.guards_intact]
    if corrupted:
        return verdict(Verdict.GUARD_CORRUPTED, f"bytes written outside output(s) {', '.join(corrupted)}")
    if facts.modified_inputs:
        return verdict(Verdict.INPUT_MODIFIED, f"input(s) changed by the call: {', '.join(facts.modified_inputs)}")
    unwritten = [f"{o.name}: {o.poison_left} of {o.numel}" for o in outputs if o.poison_left]
    if unwritten:
        return verdict(Verdict.UNWRITTEN, f"element(s) never written: {'; '.join(unwritten)}")
    judged = [judge_error(o.name, o.error, o.low, rule) for o in outputs]
    errors = tuple(record for _, record, _ in judged)
    for v, _, detail in judged:
        if v is not Verdict.PASSED:
            return verdict(v, detail, errors)
    if passing_nulls:
        return verdict(
            Verdict.HARNESS_WEAK,
            f"null candidate(s) {', '.join(passing_nulls)} would pass this scenario: its check proves nothing",
            errors,
        )
    return verdict(Verdict.PASSED, "", errors)

