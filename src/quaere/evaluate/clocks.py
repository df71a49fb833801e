"""How the judge times one call and empties the caches between calls: the :class:`Clock` protocol, its host
form for CPU tasks (:class:`CpuClock`) and its CUDA-event form for GPU tasks (:class:`CudaClock`). Which calls are
timed, how many and in what order is :mod:`.timing`'s."""

from __future__ import annotations

import ctypes
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from quaere.evaluate.close_word import Marks, NoMarks, Seen, Window

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

    def bracket(self, call: Callable[[Marks], T], flag_address: int | None = None) -> tuple[T, Seen]:
        """``call(marks)``'s result and what the judge's own device timeline saw (:class:`Seen`): a first mark
        enqueued when ``call`` calls ``marks.open()`` (the judged window opens: what the judge enqueues after it
        is inside), a second once ``call`` returned, and with ``flag_address`` (a shared device word) the close
        mark ``marks.close`` enqueues (:mod:`.close_word`); NaN where there is no device."""
        ...



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

    def bracket(self, call: Callable[[Marks], T], flag_address: int | None = None) -> tuple[T, Seen]:
        """No second timeline on the CPU: the judge's wall clock already is the bound."""
        return call(NoMarks()), Seen()


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
        from quaere.runner.cuda import Driver

        self._driver = Driver.load()
        # Non-blocking: the legacy default stream, which may be waiting on a runner's close word, must not hold it.
        self._side_stream = self._driver.stream()

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

    def bracket(self, call: Callable[[Marks], T], flag_address: int | None = None) -> tuple[T, Seen]:
        """The first mark fires where ``call`` opened the window (before the judge's publish of the inputs, its
        flush and its cover, which follow it on the judge's stream), the second, enqueued once the runner
        replied (after its whole context synchronized), at once on an idle device: nothing the runner process
        does (its code is the candidate's) can move either mark, and any device work of the runner's from the
        moment the inputs exist lies between them (contexts time-slice). What lies between them besides the
        runner's work is the question the call log answers (``CallTimes.span_overhead_ms``). With
        ``flag_address``, the close mark too (:mod:`.close_word`); the judge's stream is freed even when the call
        fails after the runner said ``queued``."""
        torch = self.torch
        window = Window(torch, self._driver, self._side_stream, flag_address)
        earlier = self._last_cover
        try:
            result = call(window)
        finally:
            word_missing = window.settle()
        after = torch.cuda.Event(enable_timing=True)
        after.record()
        after.synchronize()
        # Only a cover put on the stream in this window bounds the runner's turn: an earlier call's would hold the
        # judge's own work of this one.
        cover = self._last_cover if self._last_cover is not earlier else None
        return result, window.seen(after, word_missing, cover[1] if cover else None)


def _persisting_l2_reset() -> tuple[Callable[[], Any] | None, str]:
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        reset = driver.cuCtxResetPersistingL2Cache
    except (OSError, AttributeError) as exc:
        return None, f"persisting-L2 reset unavailable ({exc}); L2 flushed by overwrite only"
    reset.restype = ctypes.c_int
    return reset, ""


