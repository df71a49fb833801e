"""The kernel's accounting of a runner process, which the candidate's code running in it cannot lower: its
CPU time and its waits for a core (``/proc/<pid>/task/*/schedstat``), read by the judge around each call
(:class:`Accounted`).

The kernel brings a thread's CPU time up to date when the thread stops running, and otherwise only at its
scheduler ticks (4 ms apart at HZ=250); read from another process, neither schedstat nor the process's
CPU-time clock adds the time since (the kernel's ``thread_group_cputime`` skips other tasks' pending time).
Read while a runner is still finishing its reply, a call would lose up to a tick to the next one (a pair
of -4.3 / +4.6 ms seen on the development machine, 2026-12-02). So a read waits, briefly, for the runner
to be off the CPU: a CPU runner blocks on its next request as soon as it has replied. A runner that stays
on the CPU past the wait is read stale; the time it hides then is counted in its next call, since the
judge adds the CPU time between calls to each call's (:attr:`Accounted.idle_cpu_ms`).

On a virtual machine the hypervisor can take a CPU away (steal): that time is in neither count, but it is
in a call's wall time, so it lowers (CPU + waits - claim), and more in a long call than a short one. The
judge measures the machine's steal share over each timed run (:func:`machine_ticks`, :func:`steal_share`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

SETTLE_S = 0.005
"""How long a read waits for the runner to be off the CPU (an honest CPU runner blocks within
microseconds of its reply; on a loaded machine it may first wait for a core to finish)."""
POLL_S = 50e-6


@dataclass(frozen=True)
class Accounted:
    """The kernel's accounting of a runner around one call (ms; NaN where the runner is not accounted:
    see :attr:`~quaere.evaluate.runner_client.RunnerProcess.cpu_accountable`)."""

    cpu_ms: float = math.nan
    """CPU time from just before the request (a gated call's: from its ``armed`` reply) to just after the
    reply."""
    queued_ms: float = math.nan
    """Time runnable but waiting for a core over the same interval."""
    idle_cpu_ms: float = math.nan
    """CPU time from the reply to the runner's previous request to this request. The judge stops a runner
    once it has replied (``RunnerProcess._exchange``), so this is the little it ran before the stop took, or
    everything it ran between requests where the stop could not be sent: counted with the call either way."""


def sched_ms(pid: int, settle_s: float = SETTLE_S) -> tuple[float, float]:
    """(CPU time, time runnable but waiting for a core) of process ``pid`` so far, in ms, read once none of
    its threads is running or runnable, or after ``settle_s``; (NaN, NaN) where they cannot be read (the
    process is gone)."""
    tasks = Path(f"/proc/{pid}/task")
    deadline = time.monotonic() + settle_s
    try:
        while any(_on_cpu(stat) for stat in tasks.glob("*/stat")) and time.monotonic() < deadline:
            time.sleep(POLL_S)  # not a spin: on a small busy machine the runner may need this core to stop
        threads = [path.read_text().split() for path in tasks.glob("*/schedstat")]
        if not threads:
            return math.nan, math.nan
        return sum(int(t[0]) for t in threads) / 1e6, sum(int(t[1]) for t in threads) / 1e6
    except (OSError, ValueError, IndexError):
        return math.nan, math.nan


def _on_cpu(stat: Path) -> bool:
    """Whether the thread of ``/proc/<pid>/task/<tid>/stat`` is running or waiting for a core (state
    ``R``); a thread that has ended is not."""
    try:
        return stat.read_text().rpartition(")")[2].split()[0] == "R"
    except (OSError, IndexError):
        return False


def machine_ticks(stat: Path = Path("/proc/stat")) -> tuple[int, int]:
    """(ticks stolen by the hypervisor, all ticks) of the whole machine so far, from ``/proc/stat``'s
    ``cpu`` line; (0, 0) where it cannot be read."""
    try:
        fields = [int(v) for v in stat.read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return 0, 0
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user and nice]
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_share(start: tuple[int, int], end: tuple[int, int]) -> float:
    """The share of the machine's CPU time the hypervisor took between two :func:`machine_ticks` readings
    (0 when no tick passed)."""
    ticks = end[1] - start[1]
    return (end[0] - start[0]) / ticks if ticks > 0 else 0.0
