"""The judge's end of a runner's socket: one JSON request out (with file descriptors), one reply in.

What came back is untrusted, so this module only says how the exchange failed, as an exception of its own
(:class:`WireClosed`, :class:`WireTimeout`, :class:`WireGarbled`); which verdict that is, and what to do with the
runner, is :mod:`.runner_client`'s.
"""

from __future__ import annotations

import json
import select
import socket
import time

MAX_MESSAGE = 1 << 20


class WireClosed(Exception):
    """The runner's end is gone (it closed the socket or died): no reply will come."""


class WireTimeout(Exception):
    """No reply within the time allowed."""


class WireGarbled(Exception):
    """A reply came but is not a JSON object; the message says what it began with."""


def send(channel: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    """``message`` as one JSON datagram, with ``fds`` passed along where there are any."""
    try:
        if fds:
            socket.send_fds(channel, [json.dumps(message).encode()], fds)
        else:
            channel.send(json.dumps(message).encode())
    except OSError:
        raise WireClosed() from None


def receive(channel: socket.socket, timeout_s: float, spin_s: float) -> dict:
    """The next reply, decoded: polled for up to ``spin_s`` (a woken process adds a scheduler delay that varies
    by tens of microseconds, noise in a GPU task's clock bound), then waited for until ``timeout_s``. A CPU task's
    judge passes ``spin_s = 0``: polling there takes a core from the kernel being timed, and on a small busy
    machine the preempted round trips put an unchanged kernel's clock bound milliseconds off
    (tests/evaluate/test_runner_idle.py)."""
    data = _receive(channel, timeout_s, spin_s)
    if not data:
        raise WireClosed()
    try:
        reply = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise WireGarbled(f"unreadable reply: {data[:120]!r}") from None
    if not isinstance(reply, dict):
        raise WireGarbled(f"a reply that is not an object: {data[:120]!r}")
    return reply


def _receive(channel: socket.socket, timeout_s: float, spin_s: float) -> bytes:
    started = time.perf_counter()
    while time.perf_counter() - started < min(spin_s, timeout_s):
        try:
            return channel.recv(MAX_MESSAGE, socket.MSG_DONTWAIT)
        except BlockingIOError:
            continue
        except OSError:
            return b""
    remaining = max(0.0, timeout_s - (time.perf_counter() - started))
    ready, _, _ = select.select([channel], [], [], remaining)
    if not ready:
        raise WireTimeout()
    try:
        return channel.recv(MAX_MESSAGE)
    except OSError:
        return b""
