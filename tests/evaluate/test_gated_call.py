"""The gated timed call: the runner prepares a call, says ``armed`` and makes it only on ``go``, so the judge can
publish the call's inputs after the runner is ready and before its word (nothing in the shared buffers before)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from quaere.evaluate import isolation
from quaere.evaluate.protocol import ArgSpec, CloseSpec
from quaere.evaluate.runner_client import CloseWord, RunnerConfig, RunnerLost, RunnerProcess
from quaere.evaluate.shared import MemfdAllocator
from quaere.records import Verdict

# Copies x[0] to y[0]: the output says which input the call saw.
SOURCE = 'extern "C" int first(const float* x, float* y) { y[0] = x[0]; return 0; }\n'


# A runner that burns BURN_MS of CPU around its ``armed`` word: before sending it, or once the judge has written the
# call's first input after it (polled with sleeps, so the wait itself costs little). Loaded as sitecustomize, it
# stands for any runner-side work on either side of the word.
BURN_SITE = """
import ctypes, os, time
import quaere.runner.serve as serve

def _burn():
    end = time.thread_time() + float(os.environ["BURN_MS"]) / 1e3
    while time.thread_time() < end:
        pass

_arguments, _send = serve._arguments, serve._send
first = []

def _kept(state, specs):
    types, values = _arguments(state, specs)
    first[:] = [ctypes.cast(values[0], ctypes.POINTER(ctypes.c_float))]
    return types, values

def _send_around(channel, reply):
    armed = bool(reply.get("armed"))
    if armed and os.environ["BURN_WHERE"] == "before":
        _burn()
    seen = first[0][0] if armed else None
    _send(channel, reply)
    if armed and os.environ["BURN_WHERE"] == "after":
        while first[0][0] == seen:
            time.sleep(0.0002)
        _burn()

serve._arguments, serve._send = _kept, _send_around
"""
BURN_MS = 30.0


def _start(tmp_path: Path, extra_env: dict[str, str] | None = None) -> RunnerProcess:
    source = tmp_path / "first.cpp"
    source.write_text(SOURCE)
    library = tmp_path / "first.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-O1", str(source), "-o", str(library)], check=True)
    reads = isolation.read_roots([str(tmp_path)], os.environ, os.getcwd())
    config = RunnerConfig(
        device="cpu", library=str(library), entry="first",
        policy=isolation.policy(True, False, reads, (str(tmp_path), "/dev")),
        env=isolation.runner_env(os.environ, tmp_path, extra_env or {}), stderr_path=tmp_path / "runner.stderr",
        start_timeout_s=60.0,
    )
    process = RunnerProcess(config, cwd=tmp_path)
    process.start()
    return process


@pytest.fixture
def runner(tmp_path: Path):
    process = _start(tmp_path)
    yield process
    process.close()


def _buffers(runner: RunnerProcess):
    x, y = (MemfdAllocator().allocate(name, 64) for name in ("x", "y"))
    specs, fds = zip(*(b.export() for b in (x, y)), strict=True)
    runner.map(list(specs), [fd for fd in fds if fd is not None], timeout_s=10.0)
    args = [ArgSpec(kind="ptr", buffer=x.id), ArgSpec(kind="ptr", buffer=y.id)]
    return x.typed("float32", (16,)), y.typed("float32", (16,)), args


def test_a_gated_call_runs_on_the_inputs_written_between_armed_and_go(runner: RunnerProcess) -> None:
    x, y, args = _buffers(runner)
    x[0], y[0] = 1.0, 0.0

    def publish() -> None:  # the runner is armed: it has not read x yet
        assert y[0] == 0.0
        x[0] = 7.0

    timed = runner.call(args, timed=True, timeout_s=10.0, armed=publish)
    assert timed.reply.code == 0 and y[0] == 7.0
    assert runner.call(args, timed=True, timeout_s=10.0).reply.code == 0  # ungated calls keep working


def test_an_armed_runner_takes_nothing_but_go(runner: RunnerProcess) -> None:
    x, _, args = _buffers(runner)
    call = {"op": "call", "args": [a.model_dump(mode="json", exclude_none=True) for a in args], "timed": True,
            "gate": True}
    assert runner._exchange(call, 10.0) == {"ok": True, "armed": True}  # noqa: SLF001 - the raw protocol
    reply = runner._exchange({"op": "unmap", "ids": []}, 10.0)  # noqa: SLF001
    assert reply["ok"] is False and "waits for 'go'" in reply["error"]


def _state(pid: int, want: str = "T") -> str:
    """The process's state, given a second to become ``want`` (a signal is taken when the process next runs)."""
    deadline = time.monotonic() + 1.0
    while True:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        if state == want or time.monotonic() > deadline:
            return state
        time.sleep(0.001)


def test_a_runner_runs_only_while_the_judge_waits_on_it(runner: RunnerProcess) -> None:
    """Stopped between requests (it can neither launch work nor watch the inputs while another implementation is
    timed), running from its request to its reply, and while armed (it must take its word at once)."""
    x, y, args = _buffers(runner)
    assert _state(runner.pid) == "T"
    seen: list[str] = []
    runner.call(args, timed=True, timeout_s=10.0, armed=lambda: seen.append(_state(runner.pid, want="S")))
    assert seen and seen[0] != "T"
    assert _state(runner.pid) == "T"
    runner.unmap([], timeout_s=10.0)  # continued for the request, stopped again after it
    assert _state(runner.pid) == "T" and runner.alive()


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_gated_calls_cpu_time_counts_from_its_armed_word(tmp_path: Path, where: str) -> None:
    """Before ``armed`` a runner has only prepared its request (the inputs are written after the word), and that
    work's spread between two runners of one kernel was the CPU-time bound's whole slack: it is left out. What it
    runs once the judge has written the inputs is counted: work on them ahead of ``go`` pays in full."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BURN_SITE)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)  # quaere may be on it
    runner = _start(tmp_path, {"PYTHONPATH": path, "BURN_MS": str(BURN_MS), "BURN_WHERE": where})
    try:
        if not runner.cpu_accountable:
            pytest.skip("the runner's CPU time is not accounted here (no seccomp)")
        x, y, args = _buffers(runner)
        x[0] = 1.0

        def publish() -> None:
            x[0] = 3.0

        timed = runner.call(args, timed=True, timeout_s=10.0, armed=publish)
    finally:
        runner.close()
    assert timed.reply.code == 0 and y[0] == 3.0
    counted_ms = timed.accounted.cpu_ms + timed.accounted.idle_cpu_ms
    if where == "before":
        assert counted_ms < BURN_MS / 3, timed.accounted
    else:
        assert counted_ms >= BURN_MS * 0.95, timed.accounted


def test_a_runner_that_replies_without_saying_queued_is_refused(runner: RunnerProcess) -> None:
    """A CPU runner has no device to write a word on, so it answers the call at once: to a judge that asked for the
    word, a reply that skipped ``queued`` is a protocol breach (as a rewritten runner's would be)."""
    _, _, args = _buffers(runner)
    heard: list[bool] = []
    word = CloseWord(CloseSpec(buffer=args[1].buffer or "", value=5), lambda: heard.append(True))
    with pytest.raises(RunnerLost) as lost:
        runner.call(args, timed=True, timeout_s=10.0, close=word)
    assert lost.value.verdict is Verdict.TAMPERED and "protocol" in str(lost.value)
    assert heard == []


# A runner that says ``queued`` for a call that names a close word, as a CUDA runner does once the word is enqueued
# (a CPU runner has no device to write it on): the judge's side of the exchange, without a GPU.
QUEUED_SITE = """
import quaere.runner.serve as serve
_call = serve._call

def _queued_first(state, request, go, queued):
    if request.get("close"):
        queued()
    return _call(state, request, go, queued)

serve._call = _queued_first
"""


def _queued_runner(tmp_path: Path) -> RunnerProcess:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(QUEUED_SITE)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return _start(tmp_path, {"PYTHONPATH": path})


def test_the_judge_acts_on_queued_and_then_takes_the_calls_reply(tmp_path: Path) -> None:
    runner = _queued_runner(tmp_path)
    try:
        x, y, args = _buffers(runner)
        x[0] = 4.0
        heard: list[bool] = []
        word = CloseWord(CloseSpec(buffer=args[1].buffer or "", value=5), lambda: heard.append(True))
        timed = runner.call(args, timed=True, timeout_s=10.0, close=word)
        assert heard == [True] and timed.reply.code == 0 and y[0] == 4.0
        assert runner.call(args, timed=True, timeout_s=10.0).reply.code == 0  # the exchange stayed in step
    finally:
        runner.close()


def test_a_judge_that_fails_at_queued_kills_the_runner_rather_than_lose_step(tmp_path: Path) -> None:
    runner = _queued_runner(tmp_path)
    try:
        _, _, args = _buffers(runner)

        def broken() -> None:
            raise RuntimeError("the judge's device wait failed")

        with pytest.raises(RuntimeError, match="device wait failed"):
            runner.call(args, timed=True, timeout_s=10.0, close=CloseWord(CloseSpec(buffer="y", value=5), broken))
        assert not runner.alive()
    finally:
        runner.close()
