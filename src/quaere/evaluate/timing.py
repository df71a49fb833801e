"""Interleaved timing of several implementations of one benchmark scenario (runs in the judge).

Per implementation: warm-up for ``warmup_ms``, a repetition count from the ms budget (clamped to
[min_reps, max_reps]), spread over ``rounds`` rounds whose implementation order is shuffled each round.
What one repetition is belongs to the implementation (:class:`Repeatable`): in the judge's timing, fresh
input contents, a freshly poisoned output, a flushed cache, one start/stop pair, then a check of the output
outside the timed region. A failed repetition ends that implementation's timing with its status and reason.
Raw samples are kept.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from quaere.evaluate import stats
from quaere.evaluate.rep_plan import SLOW_ALLOWANCE, RepPlan, budget_reps, honest_cost_ms, plan_reps, warm_call_ms
from quaere.records import Timing, TimingStatus
from quaere.task.spec import TimingRule


@contextmanager
def gc_paused() -> Iterator[None]:
    """No garbage collection while repetitions run: a collection pause inside a Python wrapper's launch can
    outlast the cover and land between the events (seen on the H200: FA3's medians 30% high in one run)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class TimingFailure(RuntimeError):
    """One repetition failed; ``status`` says how (``failed``, ``hidden_work``, ``inputs_memoized``)."""

    def __init__(self, status: TimingStatus, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class Repeatable(Protocol):
    """One implementation under timing: ``rep(index)`` runs one repetition and returns its time in ms
    (raising :class:`TimingFailure` or any error when it fails); the timer keeps samples and failures."""

    name: str

    def rep(self, index: int) -> float: ...


@dataclass
class Run:
    """What the timer learned about one implementation."""

    impl: Repeatable
    samples_ms: list[float] = field(default_factory=list)
    failure: str = ""
    status: TimingStatus = TimingStatus.MEASURED
    note: str = ""
    """Set when the implementation was too slow for its full repetition count (see :func:`plan_reps`)."""

    @property
    def name(self) -> str:
        return self.impl.name


def _attempt(run: Run, action: Callable[[], None]) -> None:
    try:
        with gc_paused():
            action()
    except TimingFailure as exc:
        run.failure, run.status = exc.detail, exc.status
    except Exception as exc:  # noqa: BLE001 - the implementation's own error ends its timing, not the scenario's
        run.failure, run.status = f"{type(exc).__name__}: {exc}", TimingStatus.FAILED


def _warm_up(run: Run, rule: TimingRule, counter: Iterator[int], allowance_ms: float | None) -> list[float]:
    """Warm-up calls for ``rule.warmup_ms`` and at least two, or a single one when the implementation is
    bounded (``allowance_ms`` given) and that call already shows it to be slow (:func:`plan_reps`)."""
    warm: list[float] = []

    def slow() -> bool:
        return allowance_ms is not None and bool(warm) and bool(plan_reps(rule, warm[0], allowance_ms, warm[0]).note)

    def action() -> None:
        deadline = time.perf_counter() + rule.warmup_ms / 1e3
        while (len(warm) < 2 and not slow()) or time.perf_counter() < deadline:
            warm.append(run.impl.rep(next(counter)))

    _attempt(run, action)
    return warm


def _top_up(run: Run, plan: RepPlan, rule: TimingRule, allowance_ms: float, warm_calls: int,
            counter: Iterator[int]) -> None:
    """A run cut short whose timed calls proved fast after all (only its warm-up was slow) gets its full
    repetition count: slowness in the warm-up alone never buys a smaller sample. The plan is made again
    as if its ``warm_calls`` warm-up calls had run at the timed calls' speed."""
    if run.failure or not plan.note or not run.samples_ms:
        return
    call_ms = stats.median(run.samples_ms)
    full = plan_reps(rule, call_ms, allowance_ms, warm_calls * call_ms)
    if full.note:
        return
    run.note = ""

    def repeat() -> None:
        while len(run.samples_ms) < full.reps:
            run.samples_ms.append(run.impl.rep(next(counter)))

    _attempt(run, repeat)


@dataclass(frozen=True)
class _Plans:
    reps: dict[str, RepPlan]
    allowance_ms: float
    """What a bounded implementation may spend (see :data:`~quaere.evaluate.rep_plan.SLOW_ALLOWANCE`)."""
    warm_calls: dict[str, int]


def _plans(runs: list[Run], rule: TimingRule, counter: Iterator[int], bounded: Collection[str]) -> _Plans:
    """Warm every implementation up (the trusted ones first: their cost sets the bounded ones' allowance)
    and plan its repetitions."""
    plans: dict[str, RepPlan] = {}
    warm_calls: dict[str, int] = {}
    costs = []
    for run in (r for r in runs if r.name not in bounded):
        warm = _warm_up(run, rule, counter, None)
        plans[run.name] = RepPlan(budget_reps(rule, warm_call_ms(warm)) if warm else 0)
        costs.append(honest_cost_ms(rule, warm))
    allowance_ms = SLOW_ALLOWANCE * (max(costs, default=0.0) or rule.warmup_ms + rule.budget_ms)
    for run in (r for r in runs if r.name in bounded):
        warm = _warm_up(run, rule, counter, allowance_ms)
        plans[run.name] = plan_reps(rule, warm_call_ms(warm), allowance_ms, sum(warm)) if warm else RepPlan(0)
        warm_calls[run.name] = len(warm)
        run.note = plans[run.name].note
    return _Plans(plans, allowance_ms, warm_calls)


def time_interleaved(impls: list[Repeatable], rule: TimingRule, rng: random.Random,
                     bounded: Collection[str] = (), first_index: int = 0) -> list[Run]:
    """Runs of ``impls`` (same order) with samples or a failure, following ``rule``. The implementations
    named in ``bounded`` (the candidate) get fewer repetitions when they are far slower than the trusted
    others (:data:`SLOW_ALLOWANCE`); the trusted ones always get the rule's count. Repetition indices
    (each one's inputs) start at ``first_index``: a second run over the same implementations passes one
    past the first's, so that no input repeats."""
    runs = [Run(impl) for impl in impls]
    counter = iter(range(first_index, 1 << 62))  # every repetition, warm-up included, gets its own index
    plans = _plans(runs, rule, counter, bounded)
    plan = {name: stats.split_into_rounds(p.reps, rule.rounds) for name, p in plans.reps.items()}
    for round_index in range(rule.rounds):
        order = list(runs)
        rng.shuffle(order)
        for run in order:
            chunk = plan[run.name]
            if run.failure or round_index >= len(chunk):
                continue

            def repeat(run: Run = run, count: int = chunk[round_index]) -> None:
                for _ in range(count):
                    run.samples_ms.append(run.impl.rep(next(counter)))

            _attempt(run, repeat)
    for run in runs:
        if run.name in bounded:
            _top_up(run, plans.reps[run.name], rule, plans.allowance_ms, plans.warm_calls[run.name], counter)
    return runs


def to_timing(run: Run, flops: float) -> Timing:
    if run.failure:
        return Timing(impl=run.name, status=run.status, samples_ms=tuple(run.samples_ms), detail=run.failure)
    median_ms = stats.median(run.samples_ms)
    return Timing(
        impl=run.name, status=TimingStatus.MEASURED, samples_ms=tuple(run.samples_ms), median_ms=median_ms,
        spread_ms=stats.iqr(run.samples_ms), tflops=stats.tflops(flops, median_ms), detail=run.note,
    )
