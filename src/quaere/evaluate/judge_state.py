"""What the judge process holds for one evaluation: the task, its array operations, the allocator of
shared buffers, the runners, and the clocks it times with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from quaere.evaluate.judge_runners import Runners
from quaere.evaluate.shared import Allocator
from quaere.evaluate.timing import Clock
from quaere.task.loader import Task


@dataclass
class JudgeState:
    task: Task
    ops: Any
    allocator: Allocator
    runners: Runners
    banned: tuple[str, ...] = ()
    clocks: dict[bool, Clock] = field(default_factory=dict)

    def banned_in(self, maps_text: str) -> frozenset[str]:
        """Banned libraries mapped in a process, from the text of its ``/proc/<pid>/maps``."""
        if not self.banned:
            return frozenset()
        from quaere.evaluate.runtime_guard import banned_mappings

        return banned_mappings(self.banned, maps_text)

    def clock(self, flush: bool) -> Clock:
        if flush not in self.clocks:
            from quaere.evaluate.timing import CpuClock, CudaClock

            self.clocks[flush] = CpuClock(flush) if self.task.spec.device == "cpu" else CudaClock(flush)
        return self.clocks[flush]
