"""The judge's side of one runner process: start it, send typed requests, time them, classify its death.

A runner is started in its own session (a timeout kills its whole process group) with a ``SOCK_SEQPACKET``
socket as its only channel; it dies with the judge (``PR_SET_PDEATHSIG``). Replies are untrusted: each is
validated against :mod:`.protocol`, and a reply that does not parse is ``tampered``. Every request is timed
with the judge's own clock (``wall_ms``), the bound that a timed call's claimed device time must respect.
The judge reads the runner's memory maps itself, from ``/proc``, so a candidate cannot hide a library it
mapped by lying about it.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from quaere.evaluate import runner_wire
from quaere.evaluate.cpu_accounting import Accounted, sched_ms
from quaere.evaluate.exits import death_verdict, describe_exit, refusal_verdict
from quaere.evaluate.protocol import (
    ArgSpec,
    ArmedReply,
    BufferSpec,
    CallReply,
    CloseSpec,
    LoadReply,
    QueuedReply,
    ReadyReply,
)
from quaere.records import Isolation, Verdict

STDERR_TAIL_BYTES = 3000
SPIN_S = 0.2  # a GPU task's judge only: see runner_wire.receive
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class CloseWord:
    """What a timed GPU call writes on its stream after its work (``spec``), and what the judge does once the
    runner says it is enqueued (``queued``: enqueue the device-side wait for it, see :mod:`.close_word`)."""

    spec: CloseSpec
    queued: Callable[[], None]


class RunnerLost(RuntimeError):
    """The runner did not answer: it died, ran out of time, or broke the protocol. ``verdict`` says which."""

    def __init__(self, verdict: Verdict, detail: str) -> None:
        super().__init__(detail)
        self.verdict = verdict
        self.detail = detail


@dataclass(frozen=True)
class RunnerConfig:
    """How to start a runner: the device kind, the library (None: a runner with nothing loaded, for
    calibration), the entry point, the sandbox policy and the environment."""

    device: str
    library: str | None
    entry: str
    policy: dict
    env: dict[str, str]
    stderr_path: Path
    start_timeout_s: float


@dataclass(frozen=True)
class Timed:
    """A reply, how long the judge waited for it by its own clock, and the kernel's accounting of the runner."""

    reply: CallReply
    wall_ms: float
    accounted: Accounted = Accounted()


def _memory_file(data: bytes) -> int:
    """A descriptor of an anonymous file holding ``data``, for the runner to read whole
    (:func:`quaere.runner.serve.read_spec`)."""
    fd = os.memfd_create("quaere-runner-spec")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    return fd


class RunnerProcess:
    """One runner; use :meth:`start`, then :meth:`map`/:meth:`call`/:meth:`unmap`, then :meth:`close`."""

    def __init__(self, config: RunnerConfig, cwd: Path | None = None) -> None:
        self.config = config
        self._stderr = open(config.stderr_path, "ab")  # noqa: SIM115 - the child writes to it until close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.channel = ours
        spec = {"fd": theirs.fileno(), "parent": os.getpid(), "device": config.device, "library": config.library,
                "entry": config.entry, "policy": config.policy}
        # The spec travels in a memory file, not in argv: its read roots run to thousands of files where a library
        # folder is carved (foreign_files), past the kernel's 128 KiB limit on one argument.
        spec_fd = _memory_file(json.dumps(spec).encode())
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "quaere.runner", str(spec_fd)], stdin=subprocess.DEVNULL,
                stdout=self._stderr, stderr=self._stderr, env=config.env, pass_fds=(theirs.fileno(), spec_fd),
                start_new_session=True, cwd=cwd,
            )
        finally:
            os.close(spec_fd)
        theirs.close()
        self.pid = self.proc.pid
        self.isolation = Isolation(separate_process=True, judge_uid=os.getuid())
        self.maps_before = ""
        self.mapped: set[str] = set()
        """Ids of the judge's buffers this runner has mapped (the judge's bookkeeping, not the runner's word)."""
        self._cpu_at_reply_ms = math.nan
        """The runner's CPU time when its latest reply came (accountable runners only)."""
        self._stopped = False
        """The judge stopped the runner's process group after its latest reply (see :meth:`_exchange`)."""

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> LoadReply:
        """Wait for ``ready``, read the maps before any candidate code, then load; raise :class:`RunnerLost`."""
        ready = self._parse(self._exchange(None, self.config.start_timeout_s), ReadyReply)
        if ready.pid != self.pid:
            raise self._tampered(f"the runner says it is pid {ready.pid}, the judge started pid {self.pid}")
        self.maps_before = self.read_maps()
        loaded = self._parse(self._replied(self._exchange({"op": "load"}, self.config.start_timeout_s)), LoadReply)
        self.isolation = loaded.isolation.model_copy(update={
            "separate_process": True, "runner_uid": self._uid(), "judge_uid": os.getuid()})
        return loaded

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the runner's whole process group, always (not only on timeout)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()

    def close(self) -> None:
        try:
            if self.alive():
                self._signal(signal.SIGCONT)
                self.channel.send(json.dumps({"op": "exit"}).encode())
                self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()
        self.channel.close()
        self._stderr.close()

    # -- requests -------------------------------------------------------------------------------------

    def map(self, buffers: list[BufferSpec], fds: list[int], timeout_s: float) -> None:
        message = {"op": "map", "buffers": [b.model_dump(mode="json") for b in buffers]}
        self._ok(self._replied(self._exchange(message, timeout_s, fds)))
        self.mapped.update(b.id for b in buffers)

    def unmap(self, ids: list[str], timeout_s: float) -> None:
        self._ok(self._replied(self._exchange({"op": "unmap", "ids": ids}, timeout_s)))
        self.mapped.difference_update(ids)

    def call(self, args: list[ArgSpec], timed: bool, timeout_s: float,
             armed: Callable[[], None] | None = None, close: CloseWord | None = None) -> Timed:
        """One call of the entry point. With ``armed``, the call is gated: the runner prepares it and waits,
        ``armed()`` runs (the judge publishes the inputs there), and only then is the runner told to go; the
        judge's clock starts at that word. The runner's CPU time and waits are counted over the whole exchange,
        except, for a gated call, up to its ``armed`` reply: until then it has only prepared its own request (its
        inputs are written after it). That Python work took 0.06-0.2 ms a call (median 0.09) on the development
        machine (2026-12-04), a spread as wide as the CPU-time bound's default slack.

        With ``close`` (a timed call on a GPU), the runner writes the close word behind its call and says
        ``queued`` before its reply; ``close.queued()`` runs then, with the runner still going."""
        message = {"op": "call", "args": [a.model_dump(mode="json", exclude_none=True) for a in args],
                   "timed": timed, "gate": armed is not None}
        if close is not None:
            message["close"] = close.spec.model_dump(mode="json")
        before = self._sched()
        counted = before
        if armed is not None:
            self._parse(self._exchange(message, timeout_s, hold=True), ArmedReply)
            # Read once it waits for its word (or stale after SETTLE_S, which moves CPU time into the call).
            counted = self._sched()
            armed()
            message = {"op": "go"}
        started = time.perf_counter_ns()
        if close is not None:
            self._parse(self._exchange(message, timeout_s, hold=True), QueuedReply)
            try:
                close.queued()
            except BaseException:
                self.kill()  # its reply would be left unread: the next request would take it for its own
                raise
            message = None
        raw = self._exchange(message, timeout_s)
        wall_ms = (time.perf_counter_ns() - started) / 1e6
        after = self._sched()
        accounted = Accounted(after[0] - counted[0], after[1] - counted[1], before[0] - self._cpu_at_reply_ms)
        self._cpu_at_reply_ms = after[0]
        reply = self._parse(raw, CallReply)
        if timed and reply.device_ms is None:
            raise self._tampered("a timed call came back without a device time")
        return Timed(reply, wall_ms, accounted)

    @property
    def single_threaded(self) -> bool:
        """The judge's own policy keeps candidate code to one thread (seccomp on, threads off): the runner's
        CPU time is then comparable to a wall-time claim (parallel threads would add up past it)."""
        return bool(self.config.policy.get("seccomp")) and not self.config.policy.get("threads")

    @property
    def cpu_accountable(self) -> bool:
        """A CPU task's single-threaded runner: the kernel's work is the runner's CPU time, which its code
        cannot lower, so the kernel's accounting bounds its claims (:class:`Accounted`). Not on a GPU, where
        the runner's CPU time is its own choice (a spin or a blocking wait), nor where threads are allowed."""
        return self.config.device == "cpu" and self.single_threaded

    def _sched(self) -> tuple[float, float]:
        """The runner's (CPU time, waits for a core) so far, in ms (:func:`sched_ms`); NaN where not accounted."""
        return sched_ms(self.pid) if self.cpu_accountable else (math.nan, math.nan)

    def _replied(self, reply: dict) -> dict:
        """``reply``, after noting the runner's CPU time at its arrival (the start of its idle time)."""
        if self.cpu_accountable:
            self._cpu_at_reply_ms = sched_ms(self.pid)[0]
        return reply

    def read_maps(self) -> str:
        """``/proc/<pid>/maps`` as the judge reads it ('' once the runner is gone)."""
        try:
            return Path(f"/proc/{self.pid}/maps").read_text()
        except OSError:
            return ""

    def stderr_tail(self) -> str:
        self._stderr.flush()
        with open(self.config.stderr_path, "rb") as f:
            f.seek(max(0, os.path.getsize(self.config.stderr_path) - STDERR_TAIL_BYTES))
            return f.read().decode(errors="replace").strip()

    # -- plumbing -------------------------------------------------------------------------------------

    def _uid(self) -> int:
        try:
            return os.stat(f"/proc/{self.pid}").st_uid
        except OSError:
            return -1

    def _signal(self, which: signal.Signals) -> None:
        try:
            os.killpg(self.proc.pid, which)
        except (ProcessLookupError, PermissionError):
            pass

    def _exchange(self, message: dict | None, timeout_s: float, fds: list[int] | None = None,
                  hold: bool = False) -> dict:
        """Send ``message`` (None: only wait) and return the reply. The runner runs only while the judge waits
        on it: it is continued before the message and stopped (SIGSTOP, its whole process group) once its reply
        is in, unless ``hold`` (a gated call waiting for its word). So no runner launches work, or polls the
        shared inputs, while another implementation is timed (a candidate that did lengthened the trusted
        kernel's window and so loosened its own bound: stage 12, call 2). Work it enqueued before replying
        still runs; see docs/security.md."""
        if self._stopped:
            self._signal(signal.SIGCONT)
            self._stopped = False
        reply = self._send_and_receive(message, timeout_s, fds)
        if not hold:
            self._signal(signal.SIGSTOP)
            self._stopped = True
        return reply

    def _send_and_receive(self, message: dict | None, timeout_s: float, fds: list[int] | None) -> dict:
        try:
            if message is not None:
                runner_wire.send(self.channel, message, fds)
            return runner_wire.receive(self.channel, timeout_s, SPIN_S if self.config.device == "cuda" else 0.0)
        except runner_wire.WireTimeout:
            self.kill()
            raise RunnerLost(Verdict.TIMED_OUT, f"no answer within {timeout_s:g} s; runner killed") from None
        except runner_wire.WireClosed:
            raise self._lost() from None
        except runner_wire.WireGarbled as exc:
            raise self._tampered(str(exc)) from None

    def _ok(self, reply: dict) -> None:
        if reply.get("ok") is not True:
            raise self._failed(reply)

    def _parse(self, reply: dict, model: type[M]) -> M:
        if reply.get("ok") is not True:
            raise self._failed(reply)
        try:
            return model.model_validate({k: v for k, v in reply.items() if k != "ok"})
        except ValidationError as exc:
            raise self._tampered(f"a reply that does not match the protocol: {exc.errors()[0]['msg']}") from None

    def _failed(self, reply: dict) -> RunnerLost:
        self.kill()
        return RunnerLost(*refusal_verdict(reply))

    def _tampered(self, why: str) -> RunnerLost:
        self.kill()
        return RunnerLost(Verdict.TAMPERED, why)

    def _lost(self) -> RunnerLost:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        tail = self.stderr_tail()
        verdict = death_verdict(code, tail)
        what = " (a forbidden system call: process or thread creation, exec, ptrace, signals to other " \
               "processes...)" if verdict is Verdict.SANDBOX_VIOLATION else ""
        detail = f"runner {describe_exit(code)}{what}" + (f"; stderr tail:\n{tail}" if tail else "")
        return RunnerLost(verdict, detail)
