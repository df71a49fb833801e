"""The judge's end of the runner socket: what each way an exchange can fail comes back as (a real socket pair)."""

from __future__ import annotations

import socket
import time

import pytest

from quaere.evaluate.exits import refusal_verdict
from quaere.evaluate.runner_wire import WireClosed, WireGarbled, WireTimeout, receive, send
from quaere.records import Verdict


@pytest.fixture
def pair():
    judge, runner = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    yield judge, runner
    judge.close()
    runner.close()


@pytest.mark.parametrize("spin_s", [0.0, 0.05])
def test_a_reply_is_one_json_object_whether_polled_or_waited_for(pair, spin_s):
    judge, runner = pair
    send(judge, {"op": "call", "args": []})
    assert runner.recv(1 << 16) == b'{"op": "call", "args": []}'
    runner.send(b'{"ok": true, "device_ms": 0.5}')
    assert receive(judge, timeout_s=1.0, spin_s=spin_s) == {"ok": True, "device_ms": 0.5}


@pytest.mark.parametrize("data, says", [(b"\xff\xfe", "unreadable reply"), (b"[1, 2]", "not an object"),
                                        (b'{"ok": tru', "unreadable reply")])
def test_a_reply_that_is_not_a_json_object_is_garbled_and_quoted(pair, data, says):
    judge, runner = pair
    runner.send(data)
    with pytest.raises(WireGarbled, match=says) as caught:
        receive(judge, timeout_s=1.0, spin_s=0.0)
    assert repr(data[:5])[2:-1] in str(caught.value)


def test_silence_is_a_timeout_after_the_time_allowed_and_a_closed_end_is_closed(pair):
    judge, runner = pair
    started = time.perf_counter()
    with pytest.raises(WireTimeout):
        receive(judge, timeout_s=0.2, spin_s=0.05)
    assert time.perf_counter() - started >= 0.2
    runner.close()
    with pytest.raises(WireClosed):
        receive(judge, timeout_s=1.0, spin_s=0.05)
    with pytest.raises(WireClosed):
        send(judge, {"op": "go"})


def test_a_refusal_is_the_candidates_when_it_failed_to_load_or_faulted_else_the_harness():
    assert refusal_verdict({"ok": False, "load_error": "undefined symbol: f"}) == (
        Verdict.CRASHED, "undefined symbol: f")
    assert refusal_verdict({"fault": "illegal address"})[0] is Verdict.CRASHED
    assert refusal_verdict({"fault": "no memory", "out_of_memory": True})[0] is Verdict.OUT_OF_MEMORY
    verdict, detail = refusal_verdict({"ok": False, "error": "unknown buffer 'q'"})
    assert verdict is Verdict.HARNESS_ERROR and "unknown buffer 'q'" in detail
