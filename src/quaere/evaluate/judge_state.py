"""What the judge process holds for one evaluation: the task, its array operations, the allocator of
shared buffers, the runners, and the clocks it times with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from quaere.evaluate.clocks import Clock
from quaere.evaluate.judge_runners import Runners
from quaere.evaluate.runner_client import RunnerLost, RunnerProcess
from quaere.evaluate.shared import BufferPool, SharedBuffer
from quaere.task.loader import Task


@dataclass
class JudgeState:
    task: Task
    ops: Any
    pool: BufferPool
    runners: Runners
    banned: tuple[str, ...] = ()
    clocks: dict[bool, Clock] = field(default_factory=dict)
    early: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Per runner pid: the banned libraries its maps held before the candidate was loaded (read once: they do not
    change, and identifying each of its objects by content on every call would repeat the same reads)."""

    def new_banned(self, runner: RunnerProcess) -> tuple[str, ...]:
        """Evidence of every banned library (by content: SONAME, exports; or by name) mapped in ``runner`` now and
        not before its library was loaded, read by the judge from ``/proc``; and of one mapped already before: a
        runner imports the standard library alone, so a banned library there came in around the candidate (a
        preloaded helper that needs it) and would otherwise pass as part of the runner."""
        if not self.banned:
            return ()
        from quaere.evaluate.maps import banned_objects, new_banned_mappings, parse_maps

        before = parse_maps(runner.maps_before)
        if runner.pid not in self.early:
            self.early[runner.pid] = tuple(f"{o.finding().evidence}, before the candidate was loaded"
                                           for o in banned_objects(before, self.banned, pid=runner.pid))
        found = new_banned_mappings(before, parse_maps(runner.read_maps()), self.banned, pid=runner.pid)
        return self.early[runner.pid] + tuple(f.evidence for f in found)

    def share(self, runner: RunnerProcess, buffers: list[SharedBuffer], timeout_s: float) -> None:
        """Make ``runner`` map every buffer of ``buffers`` it lacks; before that, unmap the buffers the pool
        retired from every live runner and free them (raises RunnerLost for ``runner``'s own failure)."""
        retired = self.pool.take_retired()
        if retired:
            ids = {b.id for b in retired}
            for impl, other in list(self.runners.live.items()):
                stale = sorted(other.mapped & ids)
                if stale and other.alive():
                    try:
                        other.unmap(stale, timeout_s)
                    except RunnerLost:
                        self.runners.drop(impl)
            for buffer in retired:
                buffer.free()
        missing = [b for b in buffers if b.id not in runner.mapped]
        if not missing:
            return
        specs, fds = [], []
        for buffer in missing:
            spec, fd = buffer.export()
            specs.append(spec)
            if fd is not None:
                fds.append(fd)
        runner.map(specs, fds, timeout_s)

    def close(self) -> None:
        self.runners.close()
        self.pool.close()

    def clock(self, flush: bool) -> Clock:
        if flush not in self.clocks:
            from quaere.evaluate.clocks import CpuClock, CudaClock

            self.clocks[flush] = CpuClock(flush) if self.task.spec.device == "cpu" else CudaClock(flush)
        return self.clocks[flush]
