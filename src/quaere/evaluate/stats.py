"""Pure statistics over timing samples: no torch, no numpy, no I/O."""

from __future__ import annotations

import math
from collections.abc import Sequence


def quantile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile ``q`` in [0, 1]; NaN for no samples."""
    if not samples:
        return math.nan
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} outside [0, 1]")
    ordered = sorted(samples)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(samples: Sequence[float]) -> float:
    return quantile(samples, 0.5)


def iqr(samples: Sequence[float]) -> float:
    """Interquartile range: the spread we report (robust to the odd slow repetition)."""
    return quantile(samples, 0.75) - quantile(samples, 0.25)


def relative_spread(samples: Sequence[float]) -> float:
    """IQR over median; NaN when the median is not positive."""
    mid = median(samples)
    return iqr(samples) / mid if mid > 0 else math.nan


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive finite values; NaN when there are none or any is not positive/finite."""
    if not values or any(not math.isfinite(v) or v <= 0 for v in values):
        return math.nan
    return math.exp(sum(math.log(v) for v in values) / len(values))


def speedup(baseline_ms: float, impl_ms: float) -> float:
    """baseline time / impl time (> 1 means impl is faster); NaN unless both are positive and finite."""
    if not (math.isfinite(baseline_ms) and math.isfinite(impl_ms)) or baseline_ms <= 0 or impl_ms <= 0:
        return math.nan
    return baseline_ms / impl_ms


def tflops(flops: float, median_ms: float) -> float:
    """Rate in TFLOP/s of ``flops`` done in ``median_ms``."""
    if not math.isfinite(median_ms) or median_ms <= 0:
        return math.nan
    return flops / (median_ms * 1e-3) / 1e12


def roofline_floor_ms(flops: float, min_bytes: float, matrix_tflops: float, bandwidth_gbps: float) -> float:
    """Fastest a call can possibly be: max(flops / peak rate, bytes / bandwidth), in ms."""
    compute_s = flops / (matrix_tflops * 1e12)
    memory_s = min_bytes / (bandwidth_gbps * 1e9)
    return max(compute_s, memory_s) * 1e3


def reps_from_budget(budget_ms: float, per_call_ms: float, min_reps: int, max_reps: int) -> int:
    """Repetitions that fill ``budget_ms`` at ``per_call_ms`` each, clamped to [min_reps, max_reps]."""
    if min_reps > max_reps:
        raise ValueError(f"min_reps {min_reps} > max_reps {max_reps}")
    if not math.isfinite(per_call_ms) or per_call_ms <= 0:
        return max_reps
    return max(min_reps, min(max_reps, math.ceil(budget_ms / per_call_ms)))


def split_into_rounds(reps: int, rounds: int) -> list[int]:
    """Spread ``reps`` over ``rounds`` as evenly as possible (earlier rounds take the remainder)."""
    rounds = max(1, min(rounds, reps)) if reps > 0 else 1
    base, extra = divmod(reps, rounds)
    return [base + (1 if i < extra else 0) for i in range(rounds)]
