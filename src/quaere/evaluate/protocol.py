"""Typed messages between the judge and a runner (validated on the judge's side: replies are untrusted).

The runner itself stays on the standard library and reads requests as plain JSON; these models are the
contract both sides follow, and the judge refuses (``tampered``) any reply outside it.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from quaere.records import Isolation


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BufferSpec(Message):
    """One judge-owned buffer to map: a CUDA IPC handle (hex) or a file descriptor sent with the message."""

    id: str
    kind: Literal["ipc", "fd"]
    nbytes: int = Field(ge=0)
    handle: str | None = None


ArgKind = Literal["ptr", "null", "stream", "i32", "i64", "u64", "f32", "f64"]


class ArgSpec(Message):
    """One argument of the entry point: a pointer into a mapped buffer, a null pointer, the runner's
    stream, or a scalar of a C type."""

    kind: ArgKind
    buffer: str | None = None
    offset: int | None = None
    value: int | float | None = None


class ReadyReply(Message):
    op: Literal["ready"]
    pid: int


class RunnerIsolation(Message):
    seccomp: bool
    landlock_abi: int = Field(ge=0)
    threads_allowed: bool
    capabilities_dropped: bool = False
    notes: list[str] = []


class LoadReply(Message):
    isolation: Isolation

    @field_validator("isolation", mode="before")
    @classmethod
    def _from_runner(cls, value: object) -> object:
        if isinstance(value, dict) and "separate_process" not in value:
            runner = RunnerIsolation.model_validate(value)
            return Isolation(separate_process=True, seccomp=runner.seccomp, landlock_abi=runner.landlock_abi,
                             threads_allowed=runner.threads_allowed,
                             capabilities_dropped=runner.capabilities_dropped, notes=tuple(runner.notes))
        return value


class ArmedReply(Message):
    """A gated call is ready: the runner waits for ``go`` (the judge publishes the inputs first)."""

    armed: Literal[True]


class CloseSpec(Message):
    """The word a timed CUDA call writes on its own stream after its end event (``value`` into the shared
    device buffer ``buffer``), which the judge's stream waits for on the device (:class:`QueuedReply`)."""

    buffer: str
    value: int = Field(ge=1, lt=2**32)


class QueuedReply(Message):
    """A call's close word is enqueued behind its work: the judge may enqueue its wait for it."""

    queued: Literal[True]


class CallReply(Message):
    """What the runner says about one call. The times are claims: the judge bounds them."""

    code: int
    device_ms: float | None = None
    host_ms: float | None = None
    drain_ms: float | None = None

    @field_validator("device_ms", "host_ms", "drain_ms")
    @classmethod
    def _finite_non_negative(cls, value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise ValueError(f"a time must be finite and >= 0, got {value}")
        return value
