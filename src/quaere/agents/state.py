"""``.quaere/campaign.json``: where a campaign stands, written atomically so a kill never tears it.

The trace is the record of what happened; this file only holds what the trace cannot say (the settings,
wall time spent in earlier runs, cost reported so far) and where the loop is (which session is open).
It is rewritten whole through a temporary file, ``fsync`` and ``os.replace``: after a crash it holds
either the previous or the new state, never a mix.
"""

from __future__ import annotations

import json
import os
import uuid
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from quaere.jsonl import read_json_file
from quaere.records import CampaignEnd
from quaere.validation import describe_first


class StateError(ValueError):
    """The campaign state file is missing where it is needed, or malformed."""


class CampaignStatus(str, Enum):
    RUNNING = "running"  # a run is (or was, when it was killed) in progress
    FINISHED = "finished"  # ended by a budget or by the goal; ``finished_reason`` says which


class CampaignState(BaseModel):
    """Where a campaign stands between runs."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] = Field(description="CampaignConfig.persistable() of the campaign.")
    campaign_id: str = Field(
        default_factory=lambda: uuid.uuid4().hex[:12], description="Names the sessions of this campaign uniquely."
    )
    status: CampaignStatus = CampaignStatus.RUNNING
    finished_reason: Annotated[CampaignEnd | None, BeforeValidator(lambda v: v or None)] = Field(
        default=None, description="Why the campaign finished; None while it has not (files written before 2026-12-04 "
        "say '')."
    )
    sessions_started: int = Field(default=0, description="Number of the last session started (1-based).")
    session_open: bool = Field(default=False, description="A session started and has not ended.")
    tool_calls: int = 0
    wall_s_before: float = Field(default=0.0, description="Wall seconds spent by earlier runs of this campaign.")
    wall_s: float = Field(default=0.0, description="Wall seconds spent, this run included, at the last save.")
    cost_usd: float = 0.0
    blocks_in_a_row: int = 0
    runs: int = Field(default=0, description="How many times the campaign was started or resumed.")


def save_state(path: Path, state: CampaignState) -> None:
    """Write ``state`` to ``path`` atomically (temporary file, fsync, rename, fsync of the folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    data = json.dumps(state.model_dump(mode="json"), indent=2).encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def load_state(path: Path) -> CampaignState:
    """Read the state; raise :class:`StateError` naming the file when it is missing or malformed."""
    data = read_json_file(path, StateError, "no campaign state here (start one without --resume)")
    try:
        return CampaignState.model_validate(data)
    except ValidationError as exc:
        raise StateError(f"{path}: {describe_first(exc)}") from None
