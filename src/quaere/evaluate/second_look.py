"""Time a scenario's implementations, judge the claims, and time them again once when the judge says a
claim cannot be believed.

The clock bounds (:mod:`quaere.evaluate.clock_bound`) compare what the judge measured around each call with
what the runner claimed. On the H200 the trusted initial kernel, timed as the candidate, was flagged on 2 of
26 configurations in one run and on none in the next (2026-12-02, ``docs/security.md``): noise that hits
one run, inferred. A forged claim or hidden work shifts every run. So a flag leads to a second
interleaved run of every implementation that did not fail outright, on inputs the first run never used,
and the verdict and the reported samples are the second run's alone. An implementation that forges only
in the first run gains nothing (its samples are dropped); one that forges in the second is judged there
with the same bound; one that forges in both is flagged. The flag of the first run is kept in the notes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection

from quaere.evaluate.clock_bound import Doubt
from quaere.evaluate.timing import Repeatable, Run, time_interleaved
from quaere.task.spec import TimingRule

SECOND_RUN_FIRST_INDEX = 1 << 40
"""Repetition index (inputs) where the second run starts: far past any first run's last."""

Judge = Callable[[list[Run]], dict[str, Doubt]]
"""Why each run's claims are not believed, by implementation name (absent: they are)."""


def time_and_judge(impls: list[Repeatable], rule: TimingRule, seed: int, bounded: Collection[str], judge: Judge,
                   reset: Callable[[], None]) -> list[Run]:
    """Runs of ``impls`` (same order) as :func:`~quaere.evaluate.timing.time_interleaved` returns them, with
    every run ``judge`` doubts in both runs marked with the second run's doubt (``hidden_work``, or
    ``unverified``). ``reset`` forgets what the judge saw of the first run's calls before the second starts."""
    runs = time_interleaved(impls, rule, random.Random(seed), bounded=bounded)
    flags = judge(runs)
    if not flags:
        return runs
    # The first run's samples are dropped whole, so that every implementation's come from the same run.
    first = "; ".join(f"{name}: {flag.why}" for name, flag in sorted(flags.items()))
    reset()
    again = [run.impl for run in runs if not run.failure]  # a failure of the timer itself stands
    second = {run.name: run for run in time_interleaved(again, rule, random.Random(seed + 1), bounded=bounded,
                                                          first_index=SECOND_RUN_FIRST_INDEX)}
    merged = [second.get(run.name, run) for run in runs]
    flags = judge(merged)
    for run in merged:
        if run.name not in second:
            continue
        if run.name in flags and not run.failure:
            run.failure, run.status = f"{flags[run.name].why} (so did a first run: {first})", flags[run.name].status
        seen = f"timed twice: the first run's clock bound flagged {first}"
        run.note = f"{run.note}; {seen}" if run.note else seen
    return merged
