"""Settings of the tooled arm, saved with the campaign so a resume (and ``quaere tool``) uses the same."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class TooledSettings(BaseModel):
    """What ``quaere run --method tooled`` may change; the defaults are what docs/methods.md describes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    docs: tuple[Path, ...] = ()
    """Documentation folders for ``quaere tool search``, besides the shipped CUDA notes and the task's own
    pages. Each must exist when the campaign starts (absolute paths are saved)."""
    same_failure_repeats: int = Field(default=3, ge=2)
    """The supervisor speaks when this many evaluations in a row fail the same way (same verdicts)."""
    readded_min_lines: int = Field(default=3, ge=1)
    """... or when one new version puts back at least this many lines deleted by an earlier version."""
    ncu_timeout_s: float = Field(default=300.0, gt=0)
    """One Nsight Compute run of the profile digest is killed after this many seconds."""
