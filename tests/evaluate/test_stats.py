"""Pure statistics helpers."""

from __future__ import annotations

import math

import pytest

from quaere.evaluate import stats


def test_median_and_quantiles() -> None:
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.median([1.0, 2.0, 3.0, 4.0]) == 2.5
    assert stats.quantile([1.0, 2.0, 3.0, 4.0, 5.0], 0.25) == 2.0
    assert math.isnan(stats.median([]))
    with pytest.raises(ValueError):
        stats.quantile([1.0], 1.5)


def test_iqr_ignores_one_outlier() -> None:
    samples = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 100.0]
    assert stats.iqr(samples) == 0.0
    assert stats.relative_spread([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0 / 3.0)


def test_geomean() -> None:
    assert stats.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert math.isnan(stats.geomean([]))
    assert math.isnan(stats.geomean([1.0, 0.0]))
    assert math.isnan(stats.geomean([1.0, math.nan]))


def test_speedup_and_tflops() -> None:
    assert stats.speedup(2.0, 1.0) == 2.0
    assert math.isnan(stats.speedup(2.0, 0.0))
    assert math.isnan(stats.speedup(math.nan, 1.0))
    assert stats.tflops(2e12, 1000.0) == pytest.approx(2.0)
    assert math.isnan(stats.tflops(1.0, 0.0))


def test_roofline_floor_is_the_slower_of_compute_and_memory() -> None:
    # 790 TFLOP/s and 4800 GB/s: 1e12 flop -> 1.266 ms; 1e9 bytes -> 0.208 ms
    assert stats.roofline_floor_ms(1e12, 1e9, 790.0, 4800.0) == pytest.approx(1e3 / 790.0)
    assert stats.roofline_floor_ms(1e6, 1e10, 790.0, 4800.0) == pytest.approx(1e10 / 4.8e12 * 1e3)


def test_reps_from_budget_is_clamped() -> None:
    assert stats.reps_from_budget(400.0, 1.0, 5, 100) == 100
    assert stats.reps_from_budget(400.0, 10.0, 5, 100) == 40
    assert stats.reps_from_budget(400.0, 1000.0, 5, 100) == 5
    assert stats.reps_from_budget(400.0, math.nan, 5, 100) == 100
    with pytest.raises(ValueError):
        stats.reps_from_budget(1.0, 1.0, 10, 5)


def test_split_into_rounds() -> None:
    assert stats.split_into_rounds(10, 3) == [4, 3, 3]
    assert stats.split_into_rounds(2, 3) == [1, 1]
    assert sum(stats.split_into_rounds(97, 4)) == 97
