"""The kernel's accounting of a process, read from outside it, as the judge reads a runner's."""

from __future__ import annotations

import math
import subprocess
import sys

from quaere.evaluate.cpu_accounting import sched_ms

BURN = """
import sys, time
while time.process_time() < 0.2:
    pass
print("burned", flush=True)
sys.stdin.read()
"""


def test_a_process_cpu_time_is_read_from_outside_and_a_gone_process_reads_nan() -> None:
    child = subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "burned\n"
        cpu_ms, queued_ms = sched_ms(child.pid)
        assert cpu_ms >= 200.0 and queued_ms >= 0.0
        again_ms, _ = sched_ms(child.pid)
        assert cpu_ms <= again_ms < cpu_ms + 50.0  # blocked on its stdin: hardly any more
    finally:
        child.communicate("")
    assert all(math.isnan(value) for value in sched_ms(child.pid))
