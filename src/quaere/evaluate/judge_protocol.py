"""Typed messages between the evaluator's parent process and the judge (one JSON object per line).

Both sides are trusted quaere code; the models keep the wire format in one place and make a malformed
message a validation error that names the field, not a ``KeyError`` three modules away.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from quaere.records import Isolation, Scenario, ScenarioVerdict, Timing
from quaere.task.spec import TimingRule


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RunnerOptions(Message):
    """How the judge starts its runners."""

    log_dir: str
    base_env: dict[str, str]
    guard_env: dict[str, str]
    start_timeout_s: float
    sandbox: bool
    threads: bool
    unreadable: tuple[str, ...] = ()


class InitRequest(Message):
    op: Literal["init"] = "init"
    task: str
    kernels: dict[str, str]
    banned: tuple[str, ...]
    runner: RunnerOptions


class CheckRequest(Message):
    op: Literal["check"] = "check"
    scenario: Scenario
    seed: int
    factor: float
    floor: float
    timeout_s: float = Field(description="Limit of the runner's call (the parent waits longer).")


class TimeRequest(Message):
    op: Literal["time"] = "time"
    scenario: Scenario
    seed: int
    factor: float
    floor: float
    timing: TimingRule
    comparisons: tuple[str, ...]
    timeout_s: float = Field(description="Limit of each runner call.")
    call_log: str | None = None


Request = Annotated[InitRequest | CheckRequest | TimeRequest, Field(discriminator="op")]
REQUEST = TypeAdapter(Request)


class Failure(Message):
    """The judge (or the task module) failed: never a verdict about the candidate."""

    ok: Literal[False] = False
    error: str
    traceback: str = ""
    out_of_memory: bool = False


class InitReply(Message):
    ok: Literal[True] = True
    pid: int
    device: str = ""


class CheckReply(Message):
    ok: Literal[True] = True
    verdict: ScenarioVerdict
    isolation: Isolation
    trusted_objects: tuple[str, ...] = ()


class TimeReply(Message):
    ok: Literal[True] = True
    timings: tuple[Timing, ...]
    clock_note: str = ""
    isolation: Isolation


INIT_REPLY: TypeAdapter[InitReply | Failure] = TypeAdapter(InitReply | Failure)
CHECK_REPLY: TypeAdapter[CheckReply | Failure] = TypeAdapter(CheckReply | Failure)
TIME_REPLY: TypeAdapter[TimeReply | Failure] = TypeAdapter(TimeReply | Failure)
