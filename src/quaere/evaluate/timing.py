"""Interleaved timing of several implementations of one benchmark scenario (runs inside the worker).

Per implementation: warm-up for ``warmup_ms``, a repetition count from the ms budget (clamped to
[min_reps, max_reps]), spread over ``rounds`` rounds whose implementation order is shuffled each round.
Before each repetition, outside the timed region: the output is freshly poisoned, the persisting L2 lines
are reset and the cache is flushed by writing a buffer larger than it. One start/stop pair per repetition
(device events on CUDA, ``perf_counter_ns`` on the CPU), then a device-wide synchronize; after it, outside
the timed region again, the output is checked. A failed check or a raised error ends that implementation's
timing with ``FAILED`` and the reason. Raw samples are kept.
"""

from __future__ import annotations

import ctypes
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from quaere.evaluate import stats
from quaere.records import Timing, TimingStatus
from quaere.task.spec import TimingRule

DEFAULT_CPU_FLUSH_BYTES = 64 << 20


class Clock(Protocol):
    """Times one call and empties the caches between calls; ``note`` says what it could not do."""

    note: str

    def flush(self) -> None:
        """Evict the caches (and reset persisting L2 lines where that exists)."""
        ...

    def time_call(self, call: Callable[[], None]) -> float:
        """Run ``call`` once and return its duration in ms, after a device-wide synchronize."""
        ...


@dataclass
class Impl:
    """One implementation to time: its call, an untimed preparation, and an untimed output check."""

    name: str
    call: Callable[[], None]
    prepare: Callable[[], None] = lambda: None
    check: Callable[[], str] = lambda: ""
    """Returns '' when the last call's output is good, else why not."""
    samples_ms: list[float] = field(default_factory=list)
    failure: str = ""


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

    def time_call(self, call: Callable[[], None]) -> float:
        start = time.perf_counter_ns()
        call()
        return (time.perf_counter_ns() - start) / 1e6


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

    def flush(self) -> None:
        if self._buffer is None:
            return
        if self._reset is not None and self._reset() != 0:
            self._reset, self.note = None, "cuCtxResetPersistingL2Cache failed; L2 flushed by overwrite only"
        self._buffer.fill_(0x5A)

    def time_call(self, call: Callable[[], None]) -> float:
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        # Keep the device busy while the host records the start event and enqueues the call: otherwise
        # the host's launch overhead (a Python wrapper can take tens of microseconds, more than a short
        # kernel) lands between the two events and is charged to some implementations more than others.
        # What is timed is device time, the same way for every implementation.
        torch.cuda._sleep(HOST_COVER_CYCLES)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        return float(start.elapsed_time(end))


def _persisting_l2_reset() -> tuple[Callable[[], Any] | None, str]:
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        reset = driver.cuCtxResetPersistingL2Cache
    except (OSError, AttributeError) as exc:
        return None, f"persisting-L2 reset unavailable ({exc}); L2 flushed by overwrite only"
    reset.restype = ctypes.c_int
    return reset, ""


def _run_checked(impl: Impl, clock: Clock) -> float:
    impl.prepare()
    clock.flush()
    elapsed = clock.time_call(impl.call)
    problem = impl.check()
    if problem:
        raise OutputMismatch(problem)
    return elapsed


class OutputMismatch(RuntimeError):
    """A timed call's output differs from the verified untimed output."""


def _attempt(impl: Impl, action: Callable[[], None]) -> None:
    try:
        action()
    except OutputMismatch as exc:
        impl.failure = f"output of a timed call: {exc}"
    except Exception as exc:  # noqa: BLE001 - the implementation's own error ends its timing, not the scenario's
        impl.failure = f"{type(exc).__name__}: {exc}"


def time_interleaved(impls: list[Impl], rule: TimingRule, clock: Clock, rng: random.Random) -> None:
    """Fill each impl's ``samples_ms`` (or its ``failure``) following ``rule``."""
    plan: dict[str, list[int]] = {}
    for impl in impls:
        warm: list[float] = []

        def warm_up(impl: Impl = impl, warm: list[float] = warm) -> None:
            deadline = time.perf_counter() + rule.warmup_ms / 1e3
            while len(warm) < 2 or time.perf_counter() < deadline:
                warm.append(_run_checked(impl, clock))

        _attempt(impl, warm_up)
        per_call = stats.median(warm[1:] or warm)
        reps = stats.reps_from_budget(rule.budget_ms, per_call, rule.min_reps, rule.max_reps)
        plan[impl.name] = stats.split_into_rounds(reps, rule.rounds)
    for round_index in range(rule.rounds):
        order = list(impls)
        rng.shuffle(order)
        for impl in order:
            chunk = plan[impl.name]
            if impl.failure or round_index >= len(chunk):
                continue

            def repeat(impl: Impl = impl, count: int = chunk[round_index]) -> None:
                for _ in range(count):
                    impl.samples_ms.append(_run_checked(impl, clock))

            _attempt(impl, repeat)


def to_timing(impl: Impl, flops: float) -> Timing:
    if impl.failure:
        return Timing(impl=impl.name, status=TimingStatus.FAILED, samples_ms=tuple(impl.samples_ms), detail=impl.failure)
    median_ms = stats.median(impl.samples_ms)
    return Timing(
        impl=impl.name, status=TimingStatus.MEASURED, samples_ms=tuple(impl.samples_ms), median_ms=median_ms,
        spread_ms=stats.iqr(impl.samples_ms), tflops=stats.tflops(flops, median_ms),
    )
