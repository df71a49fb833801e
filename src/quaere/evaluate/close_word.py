"""The judge's device-ordered close of a runner's timed call: a mark on the judge's own device timeline that
fires after the call's work, with no host round trip in between (docs/security.md, "The close word").

The judge's first mark (:class:`Window.open`) precedes the publish of the call's inputs on its stream. The runner
writes a random word, drawn by the judge for this call, into a shared device buffer on its own stream behind its
call (after its end event) and says ``queued``. The judge's stream then waits on the device for that word
(``cuStreamWaitValue32``), takes a secret sample of the outputs, and records its second mark. So the span between
the marks holds the whole call, from the moment its inputs exist, unless the word was written before the outputs
were complete; then the sample, compared with the outputs the judge verifies afterwards, shows elements written
after the mark (:meth:`OutputSample.changed`), whichever stream or process wrote them. Contexts of two processes
time-slice on the device, so the judge's sample runs either after the runner's work or between slices of it.

The span still holds the context switches and the judge's publish, flush and cover: the bound compares its excess
over the claim with the trusted initial kernel's, as the host-side span does, but without the judge's host wake-up
in it (measured on the H200: docs/runs/2026-12-04/s26/, README there).
"""

from __future__ import annotations

import math
import secrets
import time
from dataclasses import dataclass
from typing import Any, Protocol

SAMPLE_ELEMENTS = 1 << 16
"""Output elements the judge reads at the close mark, at secret positions: a call whose word came with a share
``f`` of its output still unwritten passes unseen with probability ``(1 - f) ** SAMPLE_ELEMENTS`` (f = 1e-4:
0.15%)."""
SETTLE_S = 0.5
"""How long the judge waits, after the runner's reply, for its close mark: an honest runner wrote the word before
it synchronized and replied, so the mark follows within the judge's own sample. Past it the word never came (the
runner wrote another value, or none): the judge writes it itself to free its stream, and the call is refused."""


@dataclass(frozen=True)
class Seen:
    """What the judge's device timeline saw of one call: ms from the window's opening to the mark after the
    reply (``span_ms``) and to the close mark (``close_ms``), from the end of the judge's cover to the close mark
    (``cover_close_ms``) and to the moment its stream saw the runner's word, before the sample (``slot_ms``); NaN
    where not measured. ``word_missing``: the close word never came.

    ``slot_ms`` is the runner's turn on the device and nothing of the judge's: its context cannot run before the
    cover ends (contexts time-slice, and on the H200 a queued context waited out a 2 ms kernel of another's), and
    the word follows its work. It holds neither the judge's publish, flush and cover, whose lengths move with the
    host and the clock, nor the sample's read, whose length moves with what the call left in the L2: on the H200
    its spread per call is ~1 us where the close span's is 3-25 us (2026-12-04, session 26's call log). Work the
    runner did before the cover is outside it, and inside ``close_ms``, with two more context switches."""

    span_ms: float = math.nan
    close_ms: float = math.nan
    cover_close_ms: float = math.nan
    slot_ms: float = math.nan
    word_missing: bool = False


class OutputSample:
    """``SAMPLE_ELEMENTS`` secret positions of each output (fewer where it is smaller), drawn on the device."""

    def __init__(self, views: dict[str, Any]) -> None:
        import torch

        self.torch = torch
        generator = torch.Generator(device="cuda")
        generator.manual_seed(secrets.randbits(62))
        self.views = views
        self.positions = {name: torch.randint(0, view.numel(), (min(view.numel(), SAMPLE_ELEMENTS),),
                                              device="cuda", generator=generator)
                          for name, view in views.items() if view.numel()}
        self.taken: dict[str, Any] = {}

    def _bits(self, name: str) -> Any:
        view = self.views[name]
        flat = view.reshape(-1)
        return flat.view({1: self.torch.uint8, 2: self.torch.int16, 4: self.torch.int32,
                          8: self.torch.int64}[flat.element_size()])[self.positions[name]]

    def take(self) -> None:
        """Enqueue the read of the sampled elements (at the close mark)."""
        self.taken = {name: self._bits(name) for name in self.positions}

    def changed(self) -> int:
        """How many sampled elements differ now from what :meth:`take` read (0 when it never ran)."""
        return sum(int((self._bits(name) != taken).sum().item()) for name, taken in self.taken.items())


class Marks(Protocol):
    """What a timed call's code sees of the judge's marks (:meth:`quaere.evaluate.clocks.Clock.bracket`)."""

    value: int
    """The close word this call's runner writes (0 where there is none)."""

    @property
    def closes(self) -> bool: ...

    def open(self) -> None: ...

    def close(self, sample: OutputSample | None) -> None: ...


class NoMarks:
    """No device timeline (a CPU task): nothing to mark, no close word."""

    value = 0
    closes = False

    def open(self) -> None:
        """Nothing to mark."""

    def close(self, sample: OutputSample | None) -> None:
        raise RuntimeError("no close word without a device")


class Window:
    """One timed call's marks on the judge's stream (see the module's docstring); made by ``CudaClock.bracket``."""

    def __init__(self, torch: Any, driver: Any, side_stream: int, flag_address: int | None) -> None:
        self.torch, self.driver, self.side_stream = torch, driver, side_stream
        self.flag_address = flag_address
        self.value = secrets.randbelow(2**31 - 1) + 1
        self.before = torch.cuda.Event(enable_timing=True)
        self.worded: Any | None = None
        self.closed: Any | None = None

    @property
    def closes(self) -> bool:
        """Whether this call gets a close word (a device buffer for it was given)."""
        return self.flag_address is not None

    def open(self) -> None:
        """The first mark, and the word's buffer cleared behind it (a stale word cannot close this call)."""
        self.before.record()
        if self.flag_address is not None:
            self.driver.write_value(self._stream(), self.flag_address, 0)

    def close(self, sample: OutputSample | None) -> None:
        """Once the runner says ``queued``: wait on the device for the word, mark, read the sample, mark."""
        assert self.flag_address is not None
        self.driver.wait_value(self._stream(), self.flag_address, self.value)
        self.worded = self.torch.cuda.Event(enable_timing=True)
        self.worded.record()
        if sample is not None:
            sample.take()
        self.closed = self.torch.cuda.Event(enable_timing=True)
        self.closed.record()

    def settle(self) -> bool:
        """Wait for the close mark up to :data:`SETTLE_S`; past it write the word from a side stream so that the
        judge's stream moves on. True when the word never came."""
        if self.closed is None:
            return False
        deadline = time.perf_counter() + SETTLE_S
        while not self.closed.query():
            if time.perf_counter() > deadline:
                assert self.flag_address is not None
                self.driver.write_value(self.side_stream, self.flag_address, self.value)
                self.closed.synchronize()
                return True
            time.sleep(0)
        return False

    def seen(self, after: Any, word_missing: bool, cover_end: Any | None) -> Seen:
        """The marks' distances once ``after`` (the mark after the reply) completed; ``cover_end``: the end event
        of the cover the judge put on its stream in this window, before the runner's ``go`` (None if it put none)."""
        if self.closed is None or self.worded is None:
            return Seen(span_ms=float(self.before.elapsed_time(after)))
        covered = cover_end is not None and not word_missing
        return Seen(span_ms=float(self.before.elapsed_time(after)),
                    close_ms=float(self.before.elapsed_time(self.closed)),
                    cover_close_ms=float(cover_end.elapsed_time(self.closed)) if covered else math.nan,
                    slot_ms=float(cover_end.elapsed_time(self.worded)) if covered else math.nan,
                    word_missing=word_missing)

    def _stream(self) -> int:
        return int(self.torch.cuda.current_stream().cuda_stream)
