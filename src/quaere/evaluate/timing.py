"""Interleaved timing of several implementations of one benchmark scenario (runs in the judge).

Per implementation: warm-up for ``warmup_ms``, a repetition count from the ms budget (clamped to
[min_reps, max_reps]), spread over ``rounds`` rounds whose implementation order is shuffled each round.
What one repetition is belongs to the implementation (:class:`Repeatable`): in the judge's timing, fresh
input contents, a freshly poisoned output, a flushed cache, one start/stop pair, then a check of the output
outside the timed region. A failed repetition ends that implementation's timing with its status and reason.
Raw samples are kept.
"""

from __future__ import annotations

import ctypes
import gc
import math
import random
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from quaere.evaluate import stats
from quaere.evaluate.rep_plan import SLOW_ALLOWANCE, RepPlan, budget_reps, honest_cost_ms, plan_reps, warm_call_ms
from quaere.records import Timing, TimingStatus
from quaere.task.spec import TimingRule

DEFAULT_CPU_FLUSH_BYTES = 64 << 20
T = TypeVar("T")


class Clock(Protocol):
    """Times one call and empties the caches between calls; ``note`` says what it could not do."""

    note: str

    def flush(self) -> None:
        """Evict the caches (and reset persisting L2 lines where that exists)."""
        ...

    def cover(self, cycles: int = ...) -> None:
        """Keep the device busy while a call is being enqueued (see :meth:`CudaClock.cover`)."""
        ...

    def time_call(self, call: Callable[[], None]) -> float:
        """Run ``call`` once and return its duration in ms, after a device-wide synchronize."""
        ...

    def cover_mhz(self) -> float:
        """The effective SM clock (MHz) over the last :meth:`cover`, once it completed; NaN without a device."""
        ...

    def bracket(self, call: Callable[[Callable[[], None]], T]) -> tuple[T, float]:
        """``call(opened)``'s result and the ms between two marks on the judge's own device timeline: the first
        enqueued when ``call`` calls ``opened()`` (the judged window opens: what the judge enqueues after it is
        inside), the second once ``call`` returned; NaN where there is no device."""
        ...


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


class CpuClock:
    """``perf_counter_ns`` around the call; flush by writing a buffer of twice the last-level cache (capped)."""

    def __init__(self, flush: bool) -> None:
        import numpy

        self._buffer = numpy.zeros(_cpu_flush_bytes(), dtype=numpy.uint8) if flush else None
        self._value = 0
        self.note = ""

    def flush(self) -> None:
        if self._buffer is not None:
            self._value = (self._value + 1) % 251
            self._buffer.fill(self._value)

    def cover(self, cycles: int = 0) -> None:
        """Nothing to cover on the CPU: the call is timed from the host."""

    def cover_mhz(self) -> float:
        return math.nan

    def time_call(self, call: Callable[[], None]) -> float:
        start = time.perf_counter_ns()
        call()
        return (time.perf_counter_ns() - start) / 1e6

    def bracket(self, call: Callable[[Callable[[], None]], T]) -> tuple[T, float]:
        """No second timeline on the CPU: the judge's wall clock already is the bound."""
        return call(lambda: None), math.nan


def _cpu_flush_bytes() -> int:
    """Twice the largest cache of cpu0 (from sysfs), at most 64 MiB; 64 MiB when it cannot be read.

    The cap: a server's shared L3 can exceed 100 MiB, and sweeping twice that before every repetition
    would cost more than the kernels of a CPU task, whose data fit in far less.
    """
    largest = 0
    for size_file in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = size_file.read_text().strip().upper()
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        try:
            value = int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)
        except (ValueError, IndexError):
            continue
        largest = max(largest, value)
    return min(2 * largest, DEFAULT_CPU_FLUSH_BYTES) if largest else DEFAULT_CPU_FLUSH_BYTES


# About 0.2 ms at the H200's 1.98 GHz: longer than any wrapper's launch overhead seen (FA3, SDPA, ctypes).
HOST_COVER_CYCLES = 400_000
# What every timed call gets (~0.5 ms): a runner's call crosses a process (the request, the runner waking
# up, its argument list, the candidate's host code; the whole round trip is ~0.6 ms on the H200), and a
# comparison's Python wrapper gets the same margin, so both are timed from a busy device alike.
RUNNER_COVER_CYCLES = 1_000_000
# ~25 us: longer than enqueueing an event and a launch behind it (the cover's clock reading, CudaClock.cover).
LEAD_CYCLES = 50_000


class CudaClock:
    """CUDA events on the current stream around the call; ``torch.cuda.synchronize()`` after it.

    Flush: ``cuCtxResetPersistingL2Cache`` (driver API through ctypes; ``note`` says when it could not be
    reached) then a write of a buffer of twice the L2 size.
    """

    def __init__(self, flush: bool) -> None:
        import torch

        self.torch = torch
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2_bytes = int(getattr(props, "L2_cache_size", 0) or (60 << 20))
        self._buffer = torch.empty(2 * l2_bytes, dtype=torch.uint8, device="cuda") if flush else None
        self._reset, self.note = _persisting_l2_reset() if flush else (None, "")
        self._last_cover: tuple[Any, Any, int] | None = None

    def flush(self) -> None:
        if self._buffer is None:
            return
        if self._reset is not None and self._reset() != 0:
            self._reset, self.note = None, "cuCtxResetPersistingL2Cache failed; L2 flushed by overwrite only"
        self._buffer.fill_(0x5A)

    def cover(self, cycles: int = HOST_COVER_CYCLES) -> None:
        """Keep the device busy for ``cycles`` (~0.2 ms by default) from now (enqueued, not waited for).

        Before an in-process call it hides the host's launch overhead (a Python wrapper can take tens of
        microseconds, more than a short kernel) from the events, the same way for every implementation.
        Before a runner's call it does more: the runner's context cannot run while the judge's context is
        busy (contexts of different processes time-slice, never overlap), so everything the candidate
        enqueues, on any of its streams, starts after the cover, when the runner's start event does.

        The spin counts SM cycles, so its two events also give the clock it ran at (:meth:`cover_mhz`): a
        setting that slows the device for one implementation's calls and not another's shows there.
        """
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        # A lead spin first, so that the start event fires as it ends, with the timed spin already queued: on an
        # idle device the start would fire at once and the launch that follows (~9 us on the H200) would count.
        torch.cuda._sleep(LEAD_CYCLES)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        self._last_cover = (start, end, cycles)

    def cover_mhz(self) -> float:
        if self._last_cover is None:
            return math.nan
        start, end, cycles = self._last_cover
        end.synchronize()
        elapsed_ms = float(start.elapsed_time(end))
        return cycles / (elapsed_ms * 1e3) if elapsed_ms > 0 else math.nan

    def time_call(self, call: Callable[[], None]) -> float:
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.cover(RUNNER_COVER_CYCLES)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        return float(start.elapsed_time(end))

    def bracket(self, call: Callable[[Callable[[], None]], T]) -> tuple[T, float]:
        """The first mark fires where ``call`` opened the window (before the judge's publish of the inputs, its
        flush and its cover, which follow it on the judge's stream), the second, enqueued once the runner
        replied (after its whole context synchronized), at once on an idle device: nothing the runner process
        does (its code is the candidate's) can move either mark, and any device work of the runner's from the
        moment the inputs exist lies between them (contexts time-slice). What lies between them besides the
        runner's work is the question the call log answers (``CallTimes.span_overhead_ms``)."""
        torch = self.torch
        before, after = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        result = call(before.record)
        after.record()
        after.synchronize()
        return result, float(before.elapsed_time(after))


def _persisting_l2_reset() -> tuple[Callable[[], Any] | None, str]:
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        reset = driver.cuCtxResetPersistingL2Cache
    except (OSError, AttributeError) as exc:
        return None, f"persisting-L2 reset unavailable ({exc}); L2 flushed by overwrite only"
    reset.restype = ctypes.c_int
    return reset, ""


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
