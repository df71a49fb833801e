"""The kernel's accounting of a runner process, which the candidate's code running in it cannot lower: its
CPU time and its waits for a core, read by the judge around each call (:class:`Accounted`).

The CPU time is the process's CPU-time clock, which the kernel brings up to date when read (and which keeps
the time of threads that ended). ``/proc/<pid>/task/*/schedstat``'s count is brought up to date only when a
thread stops running or at its scheduler tick (4 ms apart at HZ=250): read while a runner was still finishing
its reply, it lost up to a tick of the call to the next one (a pair of -4.3 / +4.6 ms seen on the
development machine, 2026-12-02), which a candidate could arrange on every call. The waits come from
schedstat (its second field, ns): a wait still in progress at a read comes after the reply.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Accounted:
    """The kernel's accounting of a runner around one call (ms; NaN where the runner is not accounted:
    see :attr:`~quaere.evaluate.runner_client.RunnerProcess.cpu_accountable`)."""

    cpu_ms: float = math.nan
    """CPU time from just before the request to just after the reply."""
    queued_ms: float = math.nan
    """Time runnable but waiting for a core over the same interval."""
    idle_cpu_ms: float = math.nan
    """CPU time from the reply to the runner's previous request to this request: a runner that has replied
    blocks on its next request, so this is work done between requests (on inputs the judge already wrote)."""


def sched_ms(pid: int) -> tuple[float, float]:
    """(CPU time, time runnable but waiting for a core) of process ``pid`` so far, in ms; (NaN, NaN) where
    they cannot be read (the process is gone)."""
    try:
        cpu_ms = time.clock_gettime(_cpu_clock(pid)) * 1e3
        threads = [path.read_text().split() for path in Path(f"/proc/{pid}/task").glob("*/schedstat")]
        if not threads:
            return math.nan, math.nan
        return cpu_ms, sum(int(t[1]) for t in threads) / 1e6
    except (OSError, ValueError, IndexError):
        return math.nan, math.nan


def _cpu_clock(pid: int) -> int:
    """The clock id of process ``pid``'s CPU-time clock (glibc's ``clock_getcpuclockid``: the kernel's
    ``CPUCLOCK_SCHED`` clock of the whole thread group)."""
    return (~pid << 3) | 2
