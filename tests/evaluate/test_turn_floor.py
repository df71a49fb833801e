"""A candidate's reported median is no lower than its turn floor: the judge's turns less the trusted kernel's fixed
cost. Claims shaved inside the turn's 3 us slack are believed by the bound; the floor takes back what they cut beyond
the honest kernel's own gap, however many of the calls were forged (docs/security.md, "The runner's turn")."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from quaere.evaluate import stats
from quaere.evaluate.call_log import read_call_log, replay
from quaere.evaluate.clock_bound import CallTimes
from quaere.evaluate.judge_time import floored
from quaere.records import Timing, TimingStatus
from quaere.task.loader import load_task

RUNS = Path(__file__).resolve().parents[2] / "docs" / "runs" / "2026-12-04"


def calls(claims_ms: list[float], turns_ms: list[float]) -> CallTimes:
    times = CallTimes()
    for claim, turn in zip(claims_ms, turns_ms, strict=True):
        times.add(1.0, claim, 0.0, math.nan, math.nan, math.nan, math.nan, turn)
    return times


def measured(times: CallTimes, timed: int) -> Timing:
    samples = times.claims_ms[-timed:]
    median = stats.median(samples)
    return Timing(impl="candidate", status=TimingStatus.MEASURED, samples_ms=tuple(samples), median_ms=median,
                  tflops=stats.tflops(1e9, median))


REFERENCE = calls([0.340 + 0.0001 * (i % 3) for i in range(30)], [0.340 + 0.0001 * (i % 3) + 0.0300 for i in range(30)])
"""The trusted kernel: 30 us of fixed cost in its turn around every claim."""


def test_an_honest_candidate_keeps_its_claimed_median() -> None:
    work = [0.100 + 0.0002 * (i % 5) for i in range(20)]
    honest = calls(work, [w + 0.0295 for w in work])  # its fixed cost 0.5 us under the trusted kernel's
    timing = floored(measured(honest, 20), honest, REFERENCE, 1e9)
    assert timing.median_ms == stats.median(work)
    assert timing.turn_floor_ms == pytest.approx(stats.median(work) - 0.0005)
    assert "raised" not in timing.detail


@pytest.mark.parametrize("forged_share", [1.0, 0.6])
def test_shaved_claims_are_reported_at_the_judges_floor(forged_share: float) -> None:
    work = [0.100 + 0.0002 * (i % 5) for i in range(20)]
    claims = [w - 0.0029 if i % 10 < forged_share * 10 else w for i, w in enumerate(work)]  # 2.9 us off
    forged = calls(claims, [w + 0.0300 for w in work])
    timing = floored(measured(forged, 20), forged, REFERENCE, 1e9)
    assert stats.median(claims) < stats.median(work) - 0.002
    assert timing.median_ms == pytest.approx(stats.median(work))
    assert timing.tflops == pytest.approx(stats.tflops(1e9, timing.median_ms))
    assert "median raised from the claimed" in timing.detail


def test_warm_up_calls_do_not_raise_the_floor() -> None:
    """The last ``timed`` calls are the samples; the cold warm-up calls' long turns are not among them."""
    work = [0.100] * 11
    turns = [w + 0.0295 for w in work]
    turns[:6] = [0.500] * 6
    honest = calls(work, turns)
    assert floored(measured(honest, 5), honest, REFERENCE, 1e9).median_ms == 0.100
    assert honest.turn_floor_ms(REFERENCE, 11) > 0.4  # over every call, the warm-up's turns would set it


def test_without_turns_or_a_reference_nothing_changes() -> None:
    no_turns = calls([0.1] * 5, [math.nan] * 5)
    timing = measured(no_turns, 5)
    assert floored(timing, no_turns, REFERENCE, 1e9) == timing
    assert math.isnan(no_turns.turn_floor_ms(REFERENCE, 5))
    some = calls([0.1] * 5, [0.13] * 4 + [math.nan])
    assert math.isnan(some.turn_floor_ms(REFERENCE, 5))
    assert math.isnan(some.turn_floor_ms(calls([0.3], [math.nan]), 4))


def _log(name: str, shave_ms: float = 0.0) -> dict:
    with gzip.open(RUNS / name, "rt") as log:
        lines = [json.loads(line) for line in log.read().splitlines()]
    for line in lines:
        line["device_ms"] -= shave_ms if line["impl"] == "candidate" else 0.0
    return read_call_log(json.dumps(line) for line in lines)


@pytest.mark.parametrize(("name", "task"), [("s28/call1-ship-calls.jsonl.gz", "flash_attention_hopper"),
                                            ("s28/call1-init-calls.jsonl.gz", "flash_attention_hopper"),
                                            ("s28/call1-rms-calls.jsonl.gz", "rmsnorm_hopper")])
def test_on_the_h200s_logs_the_floor_spares_honest_kernels_and_takes_back_a_shave_the_bound_believes(
        name: str, task: str) -> None:
    """Session 28's logs (every logged call taken as timed): honest, the floor is at most 0.6 us over the median
    claim (the initial kernel against itself, 2.3 ms calls: 0.53 us); with 2.5 us off every claim the turn's bound
    (3 us) still believes most configurations, and the reported median comes back to within the honest gap between
    floor and claim."""
    honest, shaved = _log(name), _log(name, 0.0025)
    believed = [scenario for scenario, doubt in replay(shaved, load_task(task).spec.timing).items() if doubt is None]
    assert len(believed) > len({scenario for scenario, _ in honest}) // 2
    for scenario, impl in sorted(honest.items()):
        if impl is honest.get((scenario[0], "initial")) or scenario[1] != "candidate":
            continue
        reference, timed = honest[(scenario[0], "initial")], len(impl.claims_ms)
        claimed = stats.median(impl.claims_ms)
        floor = impl.turn_floor_ms(reference, timed)
        assert floor <= claimed + 0.0006, scenario
        forged = shaved[scenario]
        reported = floored(measured(forged, timed), forged, shaved[(scenario[0], "initial")], 1e9).median_ms
        assert reported == pytest.approx(max(floor, claimed - 0.0025), abs=1e-9), scenario
        assert reported >= claimed - 0.0025  # never lower than the bound alone allowed
