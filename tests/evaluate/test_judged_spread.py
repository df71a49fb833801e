"""The candidate's spread, which the goal's margin rests on, as the judge records it: claims a runner bunched at their
median pass every bound, and the spread stays that of the calls the judge measured (the runner's turns). Replayed on
the shipped kernel's calls the H200 logged in session 28 (docs/runs/2026-12-04/s28/); no device needed."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

from quaere.evaluate import stats
from quaere.evaluate.call_log import read_call_log, replay
from quaere.evaluate.clock_bound import CallTimes
from quaere.evaluate.judge_time import with_calls
from quaere.records import Timing, TimingStatus
from quaere.task.loader import load_task

LOG = Path(__file__).resolve().parents[2] / "docs" / "runs" / "2026-12-04" / "s28" / "call1-ship-calls.jsonl.gz"
RULE = load_task("flash_attention_hopper").spec.timing


def bunched(calls: CallTimes) -> CallTimes:
    """The same calls, every claim reported as the median claim."""
    middle = stats.median(calls.claims_ms)
    return CallTimes(walls_ms=calls.walls_ms, claims_ms=[middle] * len(calls.claims_ms), drains_ms=calls.drains_ms,
                     spans_ms=calls.spans_ms, cpus_ms=calls.cpus_ms, queued_ms=calls.queued_ms,
                     closes_ms=calls.closes_ms, slots_ms=calls.slots_ms)


def timing_of(calls: CallTimes) -> Timing:
    samples = tuple(calls.claims_ms)
    return Timing(impl="candidate", status=TimingStatus.MEASURED, samples_ms=samples,
                  median_ms=stats.median(samples), spread_ms=stats.iqr(samples))


def test_claims_bunched_at_their_median_pass_the_bounds_and_keep_the_spread_the_judge_measured() -> None:
    with gzip.open(LOG, "rt") as log:
        calls = read_call_log(log.read().splitlines())
    forged = {key: bunched(times) if key[1] == "candidate" else times for key, times in calls.items()}
    assert all(doubt is None for doubt in replay(forged, RULE).values())  # the bounds do not see it
    for (scenario, impl), honest in calls.items():
        if impl != "candidate":
            continue
        reported = timing_of(forged[(scenario, impl)])
        assert reported.spread_ms == 0.0
        judged = with_calls(reported, forged[(scenario, impl)], untrusted=True, stolen_share=0.0,
                            cpu_accountable=False)
        assert judged.median_ms == reported.median_ms
        assert judged.spread_ms > 0.7 * stats.iqr(honest.claims_ms), scenario


def test_an_honest_spread_wider_than_the_turns_is_kept_and_the_trusted_kernels_is_its_own() -> None:
    calls = CallTimes()
    for index in range(40):
        claim = 0.1 + 0.002 * (index % 4)  # claims spread 2-4 us; the turns a steady 0.3 ms over each
        calls.add(1.0, claim, 0.0, math.nan, math.nan, math.nan, math.nan, claim + 0.3)
    reported = timing_of(calls)
    assert with_calls(reported, calls, True, 0.0, False).spread_ms == reported.spread_ms
    narrow = timing_of(bunched(calls))
    assert math.isclose(with_calls(narrow, bunched(calls), True, 0.0, False).spread_ms, reported.spread_ms)
    assert with_calls(narrow, bunched(calls), False, 0.0, False).spread_ms == 0.0  # trusted: its claims are true
    no_turns = CallTimes()
    no_turns.add(1.0, 0.1, 0.0, math.nan, math.nan, math.nan)
    assert math.isnan(no_turns.turn_spread_ms())
