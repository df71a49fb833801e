"""The close word's host side without a GPU: the judge frees its own stream when the word never comes, the runner
takes the word only into a mapped device buffer (a runner that skips ``queued``: tests/evaluate/test_gated_call.py).
On the H200 the whole path runs in tests/evaluate/test_gpu.py and tests/adversarial/test_gpu_attacks.py (``no_word``,
``early_word``)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from quaere.evaluate import close_word
from quaere.evaluate.close_word import NoMarks, Window
from quaere.evaluate.protocol import CloseSpec
from quaere.runner import serve


class FakeEvent:
    """A CUDA event that completes once ``word`` holds ``value`` (the device-side wait ahead of it)."""

    def __init__(self, word: dict, value: Callable[[], int]) -> None:
        self.word, self.value, self.waited = word, value, 0

    def record(self) -> None:
        """Recorded behind the wait: nothing to do here."""

    def query(self) -> bool:
        return self.word.get("at") == self.value()

    def synchronize(self) -> None:
        self.waited += 1
        assert self.query(), "synchronized on a mark whose wait was never released"


class FakeDriver:
    """Stream writes land at once (the device is idle); the word's buffer is one address."""

    def __init__(self) -> None:
        self.word: dict = {}
        self.writes: list[tuple[int, int, int]] = []

    def write_value(self, stream: int, address: int, value: int) -> None:
        self.writes.append((stream, address, value))
        self.word["at"] = value

    def wait_value(self, stream: int, address: int, value: int) -> None:
        """Enqueued only: the fake event reads the word itself."""


class FakeTorch:
    def __init__(self, driver: FakeDriver, window: dict) -> None:
        self.driver, self.window = driver, window
        torch = self

        class _Cuda:
            @staticmethod
            def Event(enable_timing: bool = True) -> FakeEvent:  # noqa: N802 - torch's spelling
                return FakeEvent(driver.word, lambda: torch.window["value"])

            @staticmethod
            def current_stream():
                return type("S", (), {"cuda_stream": 0})()

        self.cuda = _Cuda


def _window(monkeypatch: pytest.MonkeyPatch) -> tuple[Window, FakeDriver]:
    monkeypatch.setattr(close_word, "SETTLE_S", 0.05)
    driver, holder = FakeDriver(), {}
    window = Window(FakeTorch(driver, holder), driver, side_stream=99, flag_address=0x1000)
    holder["value"] = window.value
    return window, driver


def test_a_word_that_never_comes_is_written_by_the_judge_from_its_side_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    window, driver = _window(monkeypatch)
    window.open()
    window.close(None)
    assert window.settle() is True
    assert driver.writes[-1] == (99, 0x1000, window.value)  # the side stream, not the held one
    assert window.closed is not None and window.closed.waited == 1


def test_a_word_the_runner_wrote_settles_without_the_judges_write(monkeypatch: pytest.MonkeyPatch) -> None:
    window, driver = _window(monkeypatch)
    window.open()
    assert driver.writes == [(0, 0x1000, 0)]  # cleared at the opening: a stale word cannot close this call
    window.close(None)
    driver.write_value(7, 0x1000, window.value)  # the runner's stream, behind its work
    assert window.settle() is False
    assert [w for w in driver.writes if w[0] == 99] == []


def test_words_are_drawn_per_call_and_never_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    values = {_window(monkeypatch)[0].value for _ in range(64)}
    assert 0 not in values and len(values) > 60


def test_a_window_that_never_closed_has_nothing_to_settle_and_no_close_span(monkeypatch: pytest.MonkeyPatch) -> None:
    window, driver = _window(monkeypatch)
    window.open()
    assert window.settle() is False and len(driver.writes) == 1
    assert not NoMarks().closes and NoMarks().value == 0
    with pytest.raises(RuntimeError):
        NoMarks().close(None)


class Timeline:
    """A device clock the fake events read when recorded (ms): each stream command below advances it by hand."""

    def __init__(self) -> None:
        self.now_ms = 0.0

    def event(self) -> TimedEvent:
        return TimedEvent(self)


class TimedEvent:
    def __init__(self, timeline: Timeline) -> None:
        self.timeline, self.at_ms = timeline, math.nan

    def record(self) -> None:
        self.at_ms = self.timeline.now_ms

    def query(self) -> bool:
        return True

    def elapsed_time(self, later: TimedEvent) -> float:
        return later.at_ms - self.at_ms


class SlowSample:
    """The judge's sample read: it takes ``ms`` of the device timeline."""

    def __init__(self, timeline: Timeline, ms: float) -> None:
        self.timeline, self.ms = timeline, ms

    def take(self) -> None:
        self.timeline.now_ms += self.ms


def test_the_runners_turn_runs_from_the_windows_cover_to_the_word_without_the_sample() -> None:
    timeline = Timeline()
    torch = type("T", (), {"cuda": type("C", (), {"Event": staticmethod(lambda enable_timing=True: timeline.event()),
                                                  "current_stream": staticmethod(
                                                      lambda: type("S", (), {"cuda_stream": 0})())})})()
    window = Window(torch, FakeDriver(), side_stream=99, flag_address=0x1000)
    window.open()  # 0 ms: the first mark
    timeline.now_ms = 0.7
    cover_end = timeline.event()
    cover_end.record()  # 0.7 ms: the judge's publish, flush and cover are over
    timeline.now_ms = 1.0  # the runner's turn: 0.3 ms, then its word
    window.close(SlowSample(timeline, 0.02))
    after = timeline.event()
    after.record()
    seen = window.seen(after, word_missing=False, cover_end=cover_end)
    assert math.isclose(seen.slot_ms, 0.3) and math.isclose(seen.cover_close_ms, 0.32)
    assert math.isclose(seen.close_ms, 1.02)
    assert math.isnan(window.seen(after, word_missing=False, cover_end=None).slot_ms)  # no cover in this window
    assert math.isnan(window.seen(after, word_missing=True, cover_end=cover_end).slot_ms)  # the judge wrote the word


def test_the_runner_takes_the_word_only_into_a_mapped_device_buffer_of_four_bytes() -> None:
    state = serve.State(serve.Device("cuda"))
    state.mappings = {"dev": serve.Mapping(0x2000, 4), "tiny": serve.Mapping(0x3000, 2),
                      "shm": serve.Mapping(0x4000, 64, handle=object())}
    assert serve._close_address(state, {"buffer": "dev", "value": 3}) == 0x2000  # noqa: SLF001
    for name in ("tiny", "shm", "absent"):
        with pytest.raises(serve.RequestError, match="not a mapped device buffer"):
            serve._close_address(state, {"buffer": name, "value": 3})  # noqa: SLF001


def test_a_close_spec_holds_a_nonzero_32_bit_word() -> None:
    for bad in (0, 2**32, -1):
        with pytest.raises(ValueError):
            CloseSpec(buffer="b", value=bad)
    assert CloseSpec(buffer="b", value=2**32 - 1).value == 2**32 - 1
    assert math.isnan(close_word.Seen().close_ms)
