"""The isolated worker: ``python -m quaere.evaluate.worker``, one JSON request per stdin line, one JSON
reply per line on the original stdout.

It imports the task module, loads each built kernel with ``RTLD_LOCAL`` (its symbols never join the
global scope, so they cannot replace the harness's timers or allocators) and runs one scenario per
request. Anything the kernel prints goes to stderr: fd 1 is pointed there before any kernel is loaded,
and replies use a private duplicate of the original stdout. A kernel that raises or breaks the device
gets its verdict in the reply, after which the worker exits (a CUDA context does not recover); a kernel
that kills the process is the parent's to classify.

Requests: ``init`` {task, kernels: {impl: path}, banned}, ``check`` {scenario, seed, factor, floor},
``time`` {scenario, seed, factor, floor, timing, comparisons}.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from quaere.evaluate.arrays import ops_for
from quaere.evaluate.correctness import Rule
from quaere.evaluate.scenario_run import CandidateFault, check_scenario, time_scenario
from quaere.records import Scenario, ScenarioVerdict, Verdict
from quaere.task.loader import Task, load_task
from quaere.task.spec import TimingRule


@dataclass
class WorkerState:
    task: Task
    ops: Any
    kernel_paths: dict[str, str]
    banned: tuple[str, ...]
    entries: dict[str, Any] = field(default_factory=dict)
    clocks: dict[bool, Any] = field(default_factory=dict)

    def entry(self, impl: str) -> Any:
        """The entry point of ``impl``'s kernel, loaded on first use (raises OSError/AttributeError)."""
        if impl not in self.entries:
            path = self.kernel_paths.get(impl)
            if not path:
                raise OSError(f"no built kernel for '{impl}'")
            library = ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
            self.entries[impl] = getattr(library, self.task.spec.entry_point)
        return self.entries[impl]

    def banned_now(self) -> frozenset[str]:
        """Banned libraries mapped into this process right now (empty when the task bans none)."""
        if not self.banned:
            return frozenset()
        from quaere.evaluate.runtime_guard import banned_mappings, read_maps

        return banned_mappings(self.banned, read_maps())

    def clock(self, flush: bool) -> Any:
        if flush not in self.clocks:
            from quaere.evaluate.timing import CpuClock, CudaClock

            self.clocks[flush] = CpuClock(flush) if self.task.spec.device == "cpu" else CudaClock(flush)
        return self.clocks[flush]


def _init(request: dict) -> tuple[WorkerState, dict]:
    task = load_task(request["task"])
    state = WorkerState(
        task=task, ops=ops_for(task.spec.device), kernel_paths=dict(request["kernels"]),
        banned=tuple(request.get("banned", ())),
    )
    try:
        state.entry("candidate")
    except (OSError, AttributeError) as exc:
        return state, {"ok": False, "load_error": f"could not load the candidate: {exc}"}
    reply: dict[str, Any] = {"ok": True, "pid": os.getpid()}
    if task.spec.device == "cuda":
        import torch

        reply["device"] = torch.cuda.get_device_name()
    return state, reply


def _rule(request: dict) -> Rule:
    return Rule(factor=float(request["factor"]), floor=float(request["floor"]))


def _handle(state: WorkerState | None, request: dict) -> tuple[WorkerState | None, dict]:
    op = request.get("op")
    if op == "init":
        return _init(request)
    if state is None:
        return state, {"ok": False, "error": "the first request must be 'init'"}
    scenario = Scenario.model_validate(request["scenario"])
    seed = int(request["seed"])
    if op == "check":
        verdict = check_scenario(state, scenario, seed, _rule(request))
        return state, {"ok": True, "verdict": verdict.model_dump(mode="json")}
    if op == "time":
        timing_rule = TimingRule.model_validate(request["timing"])
        timings = time_scenario(state, scenario, seed, _rule(request), timing_rule, tuple(request["comparisons"]))
        note = state.clock(timing_rule.flush_l2).note
        return state, {"ok": True, "timings": [t.model_dump(mode="json") for t in timings], "clock_note": note}
    return state, {"ok": False, "error": f"unknown op {op!r}"}


def _device_broken(state: WorkerState | None) -> bool:
    """Whether the device context is unusable (a sticky CUDA error): then the worker must not go on."""
    if state is None or state.task.spec.device != "cuda":
        return False
    try:
        state.ops.synchronize()
    except Exception:  # noqa: BLE001 - any error here is a verdict, not a crash of quaere
        return True
    return False


def _fault_reply(request: dict, fault: CandidateFault) -> dict:
    verdict = ScenarioVerdict(
        scenario_id=request.get("scenario", {}).get("id", "?"),
        verdict=Verdict.OUT_OF_MEMORY if fault.out_of_memory else Verdict.CRASHED,
        seed=int(request.get("seed", 0)),
        detail=str(fault),
    )
    return {"ok": True, "fault": True, "verdict": verdict.model_dump(mode="json")}


def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    state: WorkerState | None = None
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        leave = False
        try:
            state, reply = _handle(state, request)
        except CandidateFault as fault:
            reply, leave = _fault_reply(request, fault), True
        except Exception as exc:  # noqa: BLE001 - quaere's (or the task module's) own failure: reported, never a pass
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
            reply["out_of_memory"] = "out of memory" in str(exc).lower()
        leave = leave or _device_broken(state)
        replies.write((json.dumps(reply) + "\n").encode())
        replies.flush()
        if leave:
            os._exit(1)


def main() -> None:
    sys.stdout.flush()
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # kernel printf and stray prints land in stderr, never in the protocol
    sys.stdout = sys.stderr
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
