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

import os
import sys
import traceback
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel

from quaere.evaluate.arrays import ops_for
from quaere.evaluate.correctness import Rule
from quaere.evaluate.foreign_files import runner_hidden
from quaere.evaluate.isolation import SYSTEM_READ_ROOTS
from quaere.evaluate.judge_check import check_scenario
from quaere.evaluate.judge_protocol import (
    REQUEST,
    CheckReply,
    CheckRequest,
    Failure,
    InitReply,
    InitRequest,
    TimeReply,
    TimeRequest,
)
from quaere.evaluate.judge_runners import Runners, RunnerSettings
from quaere.evaluate.judge_state import JudgeState
from quaere.evaluate.judge_time import time_scenario
from quaere.evaluate.shared import BufferPool, allocator_for
from quaere.runner.sandbox import die_with_parent, make_undumpable
from quaere.task.loader import load_task


def _init(request: InitRequest) -> tuple[JudgeState, InitReply]:
    task = load_task(request.task)
    runner = request.runner
    settings = RunnerSettings(
        device=task.spec.device, entry=task.spec.entry_point, kernels=dict(request.kernels),
        log_dir=Path(runner.log_dir), base_env=dict(runner.base_env), guard_env=dict(runner.guard_env),
        start_timeout_s=runner.start_timeout_s, sandbox=runner.sandbox, threads=runner.threads,
        unreadable=runner.unreadable, hidden=runner_hidden(request.banned, runner.base_env, sys.path,
                                                        (sys.prefix, sys.base_prefix, sys.exec_prefix),
                                                        SYSTEM_READ_ROOTS),
    )
    state = JudgeState(task=task, ops=ops_for(task.spec.device), pool=BufferPool(allocator_for(task.spec.device)),
                       runners=Runners(settings), banned=request.banned)
    device = ""
    if task.spec.device == "cuda":
        import torch

        device = torch.cuda.get_device_name()
    return state, InitReply(pid=os.getpid(), device=device)


def _check(state: JudgeState, request: CheckRequest) -> CheckReply:
    rule = Rule(factor=request.factor, floor=request.floor)
    verdict = check_scenario(state, request.scenario, request.seed, rule, request.timeout_s)
    return CheckReply(verdict=verdict, isolation=state.runners.isolation,
                      trusted_objects=state.runners.trusted_objects)


def _time(state: JudgeState, request: TimeRequest) -> TimeReply:
    rule = Rule(factor=request.factor, floor=request.floor)
    call_log = Path(request.call_log) if request.call_log else None
    timings = time_scenario(state, request.scenario, request.seed, rule, request.timing, request.comparisons,
                            request.timeout_s, call_log)
    return TimeReply(timings=tuple(timings), clock_note=state.clock(request.timing.flush_l2).note,
                     isolation=state.runners.isolation)


def _handle(state: JudgeState | None, line: bytes) -> tuple[JudgeState | None, BaseModel]:
    request = REQUEST.validate_json(line)
    if isinstance(request, InitRequest):
        return _init(request)
    if state is None:
        return state, Failure(error="the first request must be 'init'")
    if isinstance(request, CheckRequest):
        return state, _check(state, request)
    return state, _time(state, request)


def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    state: JudgeState | None = None
    try:
        for line in requests:
            if not line.strip():
                continue
            try:
                state, reply = _handle(state, line)
            except Exception as exc:  # noqa: BLE001 - quaere's (or the task module's) own failure: reported, never a pass
                reply = Failure(error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(),
                                out_of_memory="out of memory" in str(exc).lower())
            replies.write((reply.model_dump_json() + "\n").encode())
            replies.flush()
    finally:
        if state is not None:
            state.close()


def main() -> None:
    make_undumpable()
    # Killed with its parent (quaere eval, the service): an evaluation interrupted or killed leaves no judge
    # behind, and the judge's death takes its runners (theirs is set the same way).
    die_with_parent()
    if os.getppid() == 1:
        os._exit(3)  # the parent died before the line above: nobody to serve
    sys.stdout.flush()
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints land in stderr, never in the protocol
    sys.stdout = sys.stderr
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
