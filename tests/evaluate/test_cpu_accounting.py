"""The kernel's accounting of a process, read from outside it, as the judge reads a runner's."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

from quaere.evaluate.cpu_accounting import machine_ticks, sched_ms, steal_share

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


def test_the_machines_steal_share_comes_from_proc_stat(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 50 0 25 400 5 0 0 20 0 0\n")
    start = machine_ticks(stat)
    assert start == (40, 1000)
    stat.write_text("cpu  150 0 60 880 10 0 0 100 7 0\n")
    assert abs(steal_share(start, machine_ticks(stat)) - 60 / 200) < 1e-12
    assert machine_ticks(tmp_path / "absent") == (0, 0) and steal_share((0, 0), (0, 0)) == 0.0
