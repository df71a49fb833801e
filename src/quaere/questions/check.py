"""What a moment detector answers: whether its moment holds now, and the evidence either way."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from quaere.records import Moment


class Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MomentCheck(Config):
    """The verdict of one detector: whether its moment holds now, and the evidence for the verdict."""

    moment: Moment
    holds: bool
    evidence: str


class MomentHit(Config):
    """A moment that holds, with the evidence a person (or the agent) is shown."""

    moment: Moment
    evidence: str
