"""The evaluator service's wire format: one JSON request per connection, one JSON reply.

Requests carry the candidate's *bytes*, never a path: the service evaluates its own copy, on its own copy
of the pinned task, with its own build cache. Replies carry the signed store entry (or a refusal that says
why). Registration is not a request: it is written by root (``quaere run``) or the service's own user, who
can sign with the store's key; the agent's user never can.
"""

from __future__ import annotations

import base64
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from quaere.records import Scenario
from quaere.store.records import EvaluationEntry, Starter, TrustMode

MAX_REQUEST_BYTES = 64 << 20  # a kernel source and a scenarios list; far above any real one


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Ping(_Message):
    op: Literal["ping"] = "ping"


class Evaluate(_Message):
    """Evaluate these source bytes for a registered workspace."""

    op: Literal["evaluate"] = "evaluate"
    workspace_id: str
    source_name: str = Field(description="File name only (its suffix picks the compiler's language).")
    source_b64: str
    scenarios: tuple[Scenario, ...] | None = Field(default=None, description="--scenarios: a partial run.")
    seed: int | None = Field(default=None, ge=0)
    benchmark: bool = True
    no_device: bool = False
    started_by: Starter = Field(default=Starter.CALLER, description=(
        "An ask, never a label: 'confirmation' asks for the goal's confirming evaluation, which the service runs "
        "(and records as one) only when its own store says one is due for these bytes; otherwise it refuses."))

    @property
    def source(self) -> bytes:
        return base64.b64decode(self.source_b64)

    @classmethod
    def of(cls, workspace_id: str, name: str, data: bytes, **fields: object) -> Evaluate:
        return cls(workspace_id=workspace_id, source_name=name, source_b64=base64.b64encode(data).decode(), **fields)


Request = Annotated[Ping | Evaluate, Field(discriminator="op")]
REQUEST = TypeAdapter(Request)


class Pong(_Message):
    kind: Literal["pong"] = "pong"
    trust_mode: TrustMode
    store_root: str
    uid: int = Field(description="The service's uid.")


class Recorded(_Message):
    kind: Literal["recorded"] = "recorded"
    entry: EvaluationEntry


class Refused(_Message):
    """The request was understood and refused (or failed); ``reason`` names the file or field."""

    kind: Literal["refused"] = "refused"
    reason: str


Reply = Annotated[Pong | Recorded | Refused, Field(discriminator="kind")]
REPLY = TypeAdapter(Reply)
