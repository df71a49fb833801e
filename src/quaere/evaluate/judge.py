"""The judge: ``python -m quaere.evaluate.judge``, one JSON request per stdin line, one JSON reply per line
on the original stdout.

The judge is trusted code: it imports the task module (and torch for a GPU task), owns every buffer,
computes the references and every verdict, and times the comparisons. It never loads candidate code: the
candidate (and the initial kernel) run in sandboxed runner processes it starts (:mod:`.judge_runners`).
It makes itself non-dumpable, so a process of the same user cannot attach to it or write its memory.

Requests: ``init`` {task, kernels: {impl: path}, banned, runner: {...}}, ``check`` {scenario, seed,
factor, floor, timeout_s}, ``time`` {scenario, seed, factor, floor, timing, comparisons, timeout_s}.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, BinaryIO

from quaere.evaluate.arrays import ops_for
from quaere.evaluate.correctness import Rule
from quaere.evaluate.judge_check import check_scenario
from quaere.evaluate.judge_runners import Runners, RunnerSettings
from quaere.evaluate.judge_state import JudgeState
from quaere.evaluate.judge_time import time_scenario
from quaere.evaluate.shared import BufferPool, allocator_for
from quaere.records import Scenario
from quaere.task.loader import load_task
from quaere.task.spec import TimingRule

PR_SET_DUMPABLE = 4


def _init(request: dict) -> tuple[JudgeState, dict]:
    task = load_task(request["task"])
    runner = request["runner"]
    settings = RunnerSettings(
        device=task.spec.device, entry=task.spec.entry_point, kernels=dict(request["kernels"]),
        log_dir=Path(runner["log_dir"]), base_env=dict(runner["base_env"]), guard_env=dict(runner["guard_env"]),
        start_timeout_s=float(runner["start_timeout_s"]), sandbox=bool(runner["sandbox"]),
        threads=bool(runner["threads"]),
    )
    state = JudgeState(task=task, ops=ops_for(task.spec.device), pool=BufferPool(allocator_for(task.spec.device)),
                       runners=Runners(settings), banned=tuple(request.get("banned", ())))
    reply: dict[str, Any] = {"ok": True, "pid": os.getpid()}
    if task.spec.device == "cuda":
        import torch

        reply["device"] = torch.cuda.get_device_name()
    return state, reply


def _rule(request: dict) -> Rule:
    return Rule(factor=float(request["factor"]), floor=float(request["floor"]))


def _handle(state: JudgeState | None, request: dict) -> tuple[JudgeState | None, dict]:
    op = request.get("op")
    if op == "init":
        return _init(request)
    if state is None:
        return state, {"ok": False, "error": "the first request must be 'init'"}
    scenario = Scenario.model_validate(request["scenario"])
    seed, timeout_s = int(request["seed"]), float(request["timeout_s"])
    if op == "check":
        verdict = check_scenario(state, scenario, seed, _rule(request), timeout_s)
        return state, {"ok": True, "verdict": verdict.model_dump(mode="json"),
                       "isolation": state.runners.isolation.model_dump(mode="json"),
                       "trusted_objects": list(state.runners.trusted_objects)}
    if op == "time":
        timing = TimingRule.model_validate(request["timing"])
        call_log = Path(request["call_log"]) if request.get("call_log") else None
        timings = time_scenario(state, scenario, seed, _rule(request), timing, tuple(request["comparisons"]),
                                timeout_s, call_log)
        note = state.clock(timing.flush_l2).note
        return state, {"ok": True, "timings": [t.model_dump(mode="json") for t in timings], "clock_note": note,
                       "isolation": state.runners.isolation.model_dump(mode="json")}
    return state, {"ok": False, "error": f"unknown op {op!r}"}


def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    state: JudgeState | None = None
    try:
        for line in requests:
            if not line.strip():
                continue
            request = json.loads(line)
            try:
                state, reply = _handle(state, request)
            except Exception as exc:  # noqa: BLE001 - quaere's (or the task module's) own failure: reported, never a pass
                reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(),
                         "out_of_memory": "out of memory" in str(exc).lower()}
            replies.write((json.dumps(reply) + "\n").encode())
            replies.flush()
    finally:
        if state is not None:
            state.close()


def main() -> None:
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    sys.stdout.flush()
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints land in stderr, never in the protocol
    sys.stdout = sys.stderr
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
