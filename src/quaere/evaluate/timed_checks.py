"""The checks of a candidate's timed outputs beyond the per-call sample: which calls get a whole-output
check, and the checks themselves.

The sample (a few rows, every call) catches a candidate that gets a share of each output wrong with a
probability that grows with that share; a candidate that skips a sliver of work, or corrupts one element,
on timed calls only would slip through it. A whole-output check on every call would cost a full fp32
reference per call, so the candidate gets it on a secret schedule instead: one of its first
:data:`FIRST_WITHIN` calls on each configuration (every candidate that finishes its timing makes that many:
one warm-up call and at least two timed ones), then each later call with probability
``TimingRule.full_check_share``. The draw for a call is made after it returned, and the reference is
computed from the inputs as they are then, after checking the call left them as written.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field
from typing import Any

from quaere.evaluate.timing import TimingFailure
from quaere.records import TimingStatus

FIRST_WITHIN = 3
"""One of the candidate's first this-many calls on a configuration is always checked whole."""


@dataclass
class FullCheckSchedule:
    """Which of one implementation's calls on one configuration get a whole-output check.

    ``rng`` defaults to the operating system's randomness: the evaluation's seed is in its record, and a
    schedule derived from it could be predicted by whoever reads an earlier record."""

    share: float
    rng: random.Random = field(default_factory=secrets.SystemRandom)
    calls: int = 0
    first: int = -1

    def __post_init__(self) -> None:
        self.first = self.rng.randrange(FIRST_WITHIN)

    def due(self) -> bool:
        """Whether the call that just returned gets checked whole (call this once per call, after it)."""
        ordinal, self.calls = self.calls, self.calls + 1
        draw = self.rng.random()  # drawn for every call, so the first forced one does not shift the rest
        return ordinal == self.first or draw < self.share


def inputs_print(ops: Any, inputs: dict[str, Any]) -> dict[str, str]:
    """A cheap fingerprint of every input buffer (a strided sample, both ends included)."""
    return {name: ops.fingerprint(array) for name, array in inputs.items()}


def check_inputs_kept(ops: Any, inputs: dict[str, Any], before: dict[str, str], index: int) -> None:
    """Raise ``FAILED`` when timed call ``index`` changed an input it was given (fingerprints before and
    after): its output must be judged against the inputs the judge wrote."""
    changed = sorted(name for name, digest in inputs_print(ops, inputs).items() if digest != before[name])
    if changed:
        raise TimingFailure(TimingStatus.FAILED, f"timed call {index} modified its input(s) {', '.join(changed)}")


def check_whole(ops: Any, outputs: dict[str, Any], reference: dict[str, Any], bounds: dict[str, float],
                index: int) -> None:
    """Raise ``FAILED`` when an output of timed call ``index`` is off the fp32 ``reference`` of its own
    inputs anywhere by more than its bound (the sample's bound: the full check's, times its slack)."""
    for name, view in outputs.items():
        error = ops.compare(view, reference[name])
        if error.nan_count or error.nonfinite_mismatch or not error.max_abs_err <= bounds[name]:
            raise TimingFailure(TimingStatus.FAILED,
                                f"timed call {index}: {name} differs from the reference of its own inputs "
                                f"(whole output checked: max abs error {error.max_abs_err:.3e} > "
                                f"{bounds[name]:.3e}, non-finite {error.nonfinite_mismatch + error.nan_count})")
