"""The runner's loop: one JSON request per datagram on a ``SOCK_SEQPACKET`` socket, one JSON reply each.

Start-up, in this order: read the judge's spec (a memory file, :func:`read_spec`), die with the parent, point fd 1
at stderr (kernel ``printf`` never reaches the protocol), lock the files (Landlock: before the device, so that the
CUDA driver's threads start inside it), open the device (CUDA primary context, one stream, two events), say
``ready`` and wait for ``load`` (the judge reads this process's memory maps in between: its picture *before* any
candidate code), lock the system calls (seccomp, on every thread), ``dlopen`` the library (its constructors run
sandboxed), resolve the entry point.

Requests (``op``): ``map`` buffers (CUDA IPC handles, or shared-memory file descriptors passed with the
message), ``unmap`` them, ``call`` the entry point on typed arguments (timed or not), ``exit``.
A gated call (``gate``) is prepared (arguments resolved, persisting L2 released), answered ``armed``, and
made only on the next message, ``go``: the judge writes the call's inputs in between, so they exist in the
shared buffers only from just before the call (and the runner's own start-up cost is behind it).
A timed CUDA call records an event before and after the call on the runner's stream, waits for the end
event, then synchronizes the whole context: ``drain_ms`` is how long work went on after the end event
(work on another stream); the judge also bounds the whole request with its own clock. A call that names a
``close`` word (a shared buffer and a value) also writes the value there on the runner's stream after the end
event, and says ``queued`` at once: the judge's stream waits on the device for that word, then reads a secret
sample of the outputs and marks its own time (the judge's device-ordered close; docs/security.md).
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from quaere.runner import sandbox

MAX_MESSAGE = 1 << 20
SCALARS = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "u64": ctypes.c_uint64, "f32": ctypes.c_float,
           "f64": ctypes.c_double}


class RequestError(ValueError):
    """A malformed request from the judge (a bug on the trusted side, reported, never a verdict)."""


class JudgeGone(Exception):
    """The judge closed the channel while a gated call waited for ``go``."""


@dataclass
class Device:
    """The runner's view of the device: nothing on the CPU; driver, stream and events on CUDA."""

    kind: str
    driver: Any = None
    stream: int = 0
    start: int = 0
    end: int = 0

    @classmethod
    def open(cls, kind: str) -> Device:
        if kind == "cpu":
            return cls(kind)
        from quaere.runner.cuda import Driver

        driver = Driver.load()
        driver.primary_context(0)
        return cls(kind, driver, driver.stream(), driver.event(), driver.event())

    def synchronize(self) -> None:
        if self.driver is not None:
            self.driver.synchronize()


@dataclass
class Mapping:
    address: int
    nbytes: int
    handle: Any = None  # the mmap object (CPU) keeps the mapping alive


@dataclass
class State:
    device: Device
    entry: Any = None
    mappings: dict[str, Mapping] = field(default_factory=dict)
    signature: tuple[Any, ...] = ()
    """The argument types last given to the entry point (set again only when they change: it is slow)."""


def _map(state: State, request: dict, fds: list[int]) -> dict:
    fd_iter = iter(fds)
    for spec in request.get("buffers", []):
        name, nbytes = str(spec["id"]), int(spec["nbytes"])
        if spec["kind"] == "ipc":
            address = state.device.driver.ipc_open(bytes.fromhex(spec["handle"]))
            state.mappings[name] = Mapping(address, nbytes)
        elif spec["kind"] == "fd":
            fd = next(fd_iter)
            region = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            os.close(fd)
            address = ctypes.addressof(ctypes.c_char.from_buffer(region))
            state.mappings[name] = Mapping(address, nbytes, region)
        else:
            raise RequestError(f"unknown buffer kind {spec['kind']!r}")
    return {"ok": True}


def _unmap(state: State, request: dict) -> dict:
    for name in request.get("ids", []):
        mapping = state.mappings.pop(str(name), None)
        if mapping is None:
            continue
        if mapping.handle is not None:
            mapping.handle.close()
        elif state.device.driver is not None:
            state.device.driver.ipc_close(mapping.address)
    return {"ok": True}


def _arguments(state: State, specs: list[dict]) -> tuple[list[Any], list[Any]]:
    """ctypes argument types and values for the entry point, from the judge's typed argument list."""
    types: list[Any] = []
    values: list[Any] = []
    for spec in specs:
        kind = spec["kind"]
        if kind == "ptr":
            mapping = state.mappings.get(str(spec["buffer"]))
            if mapping is None:
                raise RequestError(f"argument names unmapped buffer {spec['buffer']!r}")
            offset = int(spec.get("offset", 0))
            if not 0 <= offset <= mapping.nbytes:
                raise RequestError(f"offset {offset} outside buffer {spec['buffer']!r}")
            types.append(ctypes.c_void_p)
            values.append(ctypes.c_void_p(mapping.address + offset))
        elif kind == "null":
            types.append(ctypes.c_void_p)
            values.append(ctypes.c_void_p(None))
        elif kind == "stream":
            types.append(ctypes.c_void_p)
            values.append(ctypes.c_void_p(state.device.stream or None))
        elif kind in SCALARS:
            types.append(SCALARS[kind])
            values.append(SCALARS[kind](spec["value"]))
        else:
            raise RequestError(f"unknown argument kind {kind!r}")
    return types, values


def _await_go(channel: socket.socket, spin_s: float) -> None:
    """Say ``armed`` and wait for ``go`` (see the module's docstring)."""
    _send(channel, {"ok": True, "armed": True})
    request, _ = _receive(channel, spin_s)
    if request is None:
        raise JudgeGone
    if request.get("op") != "go":
        raise RequestError(f"a gated call waits for 'go', got {request.get('op')!r}")


def _call(state: State, request: dict, go: Callable[[], None], queued: Callable[[], None]) -> dict:
    """The entry point on the request's arguments; ``go()`` is called once the call is ready to start when the
    request is gated, ``queued()`` once its close word is enqueued when it names one."""
    types, values = _arguments(state, request.get("args", []))
    entry = state.entry
    if tuple(types) != state.signature:
        entry.argtypes, entry.restype = types, ctypes.c_int
        state.signature = tuple(types)
    device = state.device
    if device.driver is not None and request.get("timed"):
        # Lines a previous call marked persisting survive the judge's flush (it overwrites L2, which does not
        # evict persisting lines): release them in this context before every timed call.
        device.driver.reset_persisting_l2()
    if request.get("gate"):
        go()
    if not request.get("timed"):
        code = entry(*values)
        device.synchronize()
        return {"ok": True, "code": int(code)}
    if device.driver is None:
        started = time.perf_counter_ns()
        code = entry(*values)
        host_ms = (time.perf_counter_ns() - started) / 1e6
        return {"ok": True, "code": int(code), "device_ms": host_ms, "host_ms": host_ms, "drain_ms": 0.0}
    driver = device.driver
    driver.record(device.start, device.stream)
    started = time.perf_counter_ns()
    code = entry(*values)
    host_ms = (time.perf_counter_ns() - started) / 1e6
    driver.record(device.end, device.stream)
    close = request.get("close")
    if close is not None:
        driver.write_value(device.stream, _close_address(state, close), int(close["value"]))
        queued()
    while not driver.event_done(device.end):
        pass  # spin: the moment the end event completes is what the drain is measured from
    end_seen = time.perf_counter_ns()
    driver.synchronize()
    drain_ms = (time.perf_counter_ns() - end_seen) / 1e6
    return {"ok": True, "code": int(code), "device_ms": driver.elapsed_ms(device.start, device.end),
            "host_ms": host_ms, "drain_ms": drain_ms}


def _close_address(state: State, close: dict) -> int:
    mapping = state.mappings.get(str(close.get("buffer")))
    if mapping is None or mapping.handle is not None or mapping.nbytes < 4:
        raise RequestError(f"the close word names {close.get('buffer')!r}, not a mapped device buffer of 4 bytes")
    return mapping.address


def _handle(state: State, request: dict, fds: list[int], go: Callable[[], None], queued: Callable[[], None]) -> dict:
    op = request.get("op")
    if op == "map":
        return _map(state, request, fds)
    if op == "unmap":
        return _unmap(state, request)
    if op == "call":
        return _call(state, request, go, queued)
    raise RequestError(f"unknown op {op!r}")


def _send(channel: socket.socket, reply: dict) -> None:
    channel.send(json.dumps(reply).encode())


SPIN_S = 0.05
"""On a GPU, after each reply the runner polls for the next message this long before it blocks. It matters
for the wait for ``go`` (the judge stops a runner between requests, not while it is armed): the word comes
within a millisecond, and a process woken from a blocking read adds a scheduler delay that varies by tens of
microseconds, which is noise in the judge's clock bound. A CPU runner blocks at once: the judge counts the
CPU time it runs outside its calls as its calls' (``Accounted.idle_cpu_ms``), which a poll would fill."""


def _receive(channel: socket.socket, spin_s: float) -> tuple[dict | None, list[int]]:
    deadline = time.perf_counter() + spin_s
    while True:
        try:
            data, fds, _flags, _address = socket.recv_fds(channel, MAX_MESSAGE, 16, socket.MSG_DONTWAIT)
            break
        except BlockingIOError:
            if time.perf_counter() > deadline:
                data, fds, _flags, _address = socket.recv_fds(channel, MAX_MESSAGE, 16)
                break
    if not data:
        return None, []
    return json.loads(data), list(fds)


def _load(state: State, config: dict, channel: socket.socket, locked: sandbox.Applied) -> bool:
    applied = sandbox.lock_syscalls(_policy(config), locked)
    report = {"seccomp": applied.seccomp, "landlock_abi": applied.landlock_abi,
              "threads_allowed": applied.threads_allowed, "capabilities_dropped": applied.capabilities_dropped,
              "notes": applied.notes}
    library = config.get("library")
    if library:
        try:
            handle = ctypes.CDLL(library, mode=os.RTLD_LOCAL | os.RTLD_NOW)
            state.entry = getattr(handle, config["entry"])
        except (OSError, AttributeError) as exc:
            _send(channel, {"ok": False, "load_error": f"the dynamic loader said: {exc}", "isolation": report})
            return False
    _send(channel, {"ok": True, "isolation": report})
    return True


def _policy(config: dict) -> sandbox.Policy:
    return sandbox.Policy(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in config["policy"].items()})


def serve(config: dict, channel: socket.socket) -> None:
    locked = sandbox.lock_files(_policy(config))
    state = State(Device.open(config["device"]))
    _send(channel, {"ok": True, "op": "ready", "pid": os.getpid()})
    spin_s = SPIN_S if state.device.driver is not None else 0.0
    request, _ = _receive(channel, spin_s)
    if request is None or request.get("op") != "load" or not _load(state, config, channel, locked):
        return
    while True:
        request, fds = _receive(channel, spin_s)
        if request is None or request.get("op") == "exit":
            return
        try:
            reply = _handle(state, request, fds, lambda: _await_go(channel, spin_s),
                            lambda: _send(channel, {"ok": True, "queued": True}))
        except JudgeGone:
            return
        except RequestError as exc:
            reply = {"ok": False, "error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a device fault during the candidate's call: report, then leave
            _send(channel, {"ok": False, "fault": f"{type(exc).__name__}: {exc}",
                            "out_of_memory": "out of memory" in str(exc).lower()})
            os._exit(1)
        _send(channel, reply)


def read_spec(fd: int) -> dict:
    """The judge's spec from the memory file ``fd`` (``RunnerProcess`` writes it), which is then closed: candidate
    code never finds it open."""
    try:
        return json.loads(os.pread(fd, os.fstat(fd).st_size, 0))
    finally:
        os.close(fd)


def main(argv: list[str]) -> None:
    config = read_spec(int(argv[1]))
    sandbox.die_with_parent()
    if os.getppid() != int(config["parent"]):
        os._exit(3)  # the judge died before this line: nobody to serve
    os.dup2(2, 1)  # candidate prints land in stderr, never in the protocol (which is the socket anyway)
    sys.stdout = sys.stderr
    channel = socket.socket(fileno=int(config["fd"]))
    serve(config, channel)
