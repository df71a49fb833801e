"""The parent's side of the judge process: start it, send one request, and classify whatever happens.

The judge is trusted and never holds candidate code (its runners do, and it classifies their deaths
itself: crashed, timed out, sandbox violation...). A judge that dies or does not answer in time is a
harness failure (``harness_error``, ``out_of_memory`` when it said so), never a pass; the next request
starts a fresh judge. A judge that fails to start is remembered and given to every later scenario.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, TypeAdapter, ValidationError

from quaere.evaluate.exits import describe_exit
from quaere.evaluate.judge_protocol import (
    CHECK_REPLY,
    INIT_REPLY,
    TIME_REPLY,
    CheckRequest,
    Failure,
    InitRequest,
    RunnerOptions,
    TimeRequest,
)
from quaere.records import Isolation, Scenario, ScenarioVerdict, Timing, TimingStatus, Verdict

STDERR_TAIL_BYTES = 3000


class JudgeLost(RuntimeError):
    """The judge did not answer: it died or ran out of time. ``verdict`` says which."""

    def __init__(self, verdict: Verdict, detail: str) -> None:
        super().__init__(detail)
        self.verdict = verdict
        self.detail = detail


class JudgeProcess:
    """One judge subprocess in its own session (so a timeout kills everything it started)."""

    def __init__(self, env: dict[str, str], stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "ab")  # noqa: SIM115 - the child writes to it until close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "quaere.evaluate.judge"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, env=env, start_new_session=True,
        )
        self._pending = b""

    def stderr_tail(self) -> str:
        self._stderr.flush()
        with open(self.stderr_path, "rb") as f:
            f.seek(max(0, os.path.getsize(self.stderr_path) - STDERR_TAIL_BYTES))
            return f.read().decode(errors="replace").strip()

    def _lost(self) -> JudgeLost:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        tail = self.stderr_tail()
        oom = "out of memory" in tail.lower() or code == -signal.SIGKILL
        detail = f"the judge {describe_exit(code)}" + (f"; stderr tail:\n{tail}" if tail else "")
        return JudgeLost(Verdict.OUT_OF_MEMORY if oom else Verdict.HARNESS_ERROR, detail)

    def request(self, message: dict, timeout_s: float) -> dict:
        """Send one request and wait for its reply line; raise :class:`JudgeLost` otherwise."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._lost() from None
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise JudgeLost(Verdict.HARNESS_ERROR, f"the judge gave no answer within {timeout_s:g} s; killed")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise self._lost()
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            self.kill()
            return {"ok": False, "error": f"unreadable reply from the judge: {line[:200]!r}"}

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        self._stderr.close()


@dataclass(frozen=True)
class JudgeConfig:
    """How to start the judge and, through it, its runners."""

    task_folder: Path
    kernels: dict[str, str]
    banned: tuple[str, ...]
    env: dict[str, str]
    """The judge's environment (never the dlopen guard: the judge loads no candidate code)."""
    guard_env: dict[str, str]
    """Added to each runner's environment: the dlopen guard's LD_PRELOAD and log."""
    log_dir: Path
    start_timeout_s: float
    sandbox: bool = True
    threads: bool = False
    unreadable: tuple[str, ...] = ()
    """Folders no runner may read, even beneath one of its read roots."""
    judge_slack_s: float = 120.0
    """Added to every request's own time limit before the parent gives up on the judge (references of a
    long scenario, a runner's start-up)."""


class Supervisor:
    """Runs requests on the judge, replacing it after every death; use as a context manager."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self._judge: JudgeProcess | None = None
        self._started = 0
        self._start_failure: JudgeLost | None = None
        self.judge_deaths = 0
        self.clock_note = ""
        """What the judge's timer could not do (e.g. reset persisting L2 lines), '' when nothing."""
        self.isolation = Isolation.unreported()
        """What separated the candidate from the judge, as the judge last reported it."""
        self.trusted_objects: frozenset[str] | None = None
        """Files mapped in the candidate's runner before its library was loaded (the dlopen guard counts
        calls from anything else as the candidate's)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if self._judge is not None:
            if exc_type is not None:
                # Interrupted (Ctrl-C) or failing: the judge may be waiting out a runner's time limit, and
                # a graceful close would wait with it. Killed, it takes its runners along (their
                # PR_SET_PDEATHSIG).
                self._judge.kill()
            self._judge.close()
            self._judge = None

    def _ready_judge(self) -> JudgeProcess:
        if self._start_failure is not None:
            raise self._start_failure
        if self._judge is not None and self._judge.alive():
            return self._judge
        if self._judge is not None:
            self._judge.close()
        self._started += 1
        worker = JudgeProcess(self.config.env, self.config.log_dir / f"judge-{self._started}.stderr")
        config = self.config
        runner = RunnerOptions(log_dir=str(config.log_dir), base_env=config.env, guard_env=config.guard_env,
                               start_timeout_s=config.start_timeout_s, sandbox=config.sandbox, threads=config.threads,
                               unreadable=config.unreadable)
        init = InitRequest(task=str(config.task_folder), kernels=config.kernels, banned=config.banned, runner=runner)
        try:
            reply = self._parse(worker.request(init.model_dump(mode="json"), config.start_timeout_s), INIT_REPLY)
        except JudgeLost as lost:
            self._start_failure = JudgeLost(lost.verdict, f"the judge did not start: {lost.detail}")
            raise self._start_failure from None
        if isinstance(reply, Failure):
            worker.close()
            self._start_failure = JudgeLost(Verdict.HARNESS_ERROR, f"the judge failed to start: {reply.error}")
            raise self._start_failure
        self._judge = worker
        return worker

    @staticmethod
    def _parse(raw: dict, adapter: TypeAdapter) -> Any:
        try:
            return adapter.validate_python(raw)
        except ValidationError as exc:
            return Failure(error=f"unreadable reply from the judge: {exc.errors()[0]['msg']}")

    def _send(self, message: BaseModel, adapter: TypeAdapter, timeout_s: float) -> Any:
        worker = self._ready_judge()
        try:
            reply = self._parse(worker.request(message.model_dump(mode="json"), timeout_s), adapter)
        except JudgeLost:
            self.judge_deaths += 1
            worker.close()
            self._judge = None
            raise
        if isinstance(reply, Failure):
            worker.close()  # after a harness error we start afresh
            self._judge = None
            return reply
        self.isolation = reply.isolation
        if getattr(reply, "trusted_objects", ()):
            self.trusted_objects = frozenset(reply.trusted_objects)
        return reply

    def check(self, scenario: Scenario, seed: int, factor: float, floor: float, timeout_s: float) -> ScenarioVerdict:
        message = CheckRequest(scenario=scenario, seed=seed, factor=factor, floor=floor, timeout_s=timeout_s)
        started = time.monotonic()

        def verdict(v: Verdict, detail: str) -> ScenarioVerdict:
            return ScenarioVerdict(scenario_id=scenario.id, verdict=v, seed=seed, detail=detail,
                                   duration_s=time.monotonic() - started)

        try:
            reply = self._send(message, CHECK_REPLY, timeout_s + self.config.judge_slack_s)
        except JudgeLost as lost:
            return verdict(lost.verdict, lost.detail)
        if isinstance(reply, Failure):
            return verdict(Verdict.OUT_OF_MEMORY if reply.out_of_memory else Verdict.HARNESS_ERROR,
                           f"{reply.error}\n{reply.traceback}".strip())
        return reply.verdict.model_copy(update={"duration_s": time.monotonic() - started})

    def time(self, message: TimeRequest, impls: tuple[str, ...], timeout_s: float) -> list[Timing]:
        """Timings for ``impls`` (in order); every one FAILED with the reason when the judge is lost.

        ``message.timeout_s`` limits each runner call; ``timeout_s`` here bounds the whole request (every
        implementation, warm-up and repetitions)."""
        try:
            reply = self._send(message, TIME_REPLY, timeout_s + self.config.judge_slack_s)
        except JudgeLost as lost:
            return [Timing(impl=i, status=TimingStatus.FAILED, detail=f"{lost.verdict.value}: {lost.detail}")
                    for i in impls]
        if isinstance(reply, Failure):
            return [Timing(impl=i, status=TimingStatus.FAILED, detail=reply.error) for i in impls]
        self.clock_note = reply.clock_note or self.clock_note
        return list(reply.timings)
