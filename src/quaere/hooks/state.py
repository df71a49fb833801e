"""The hooks' own state in ``.quaere/hooks.json``: budgets, counters and what ``hooks install`` changed.

Hooks run as separate short processes (one per event), so everything they must remember between calls
lives in this file: blocks answered so far, sessions seen, when the campaign started, whether the
campaign-start question was asked, how many ledger lines the post-tool hook has already looked at.
Updates hold an exclusive lock on ``hooks.json.lock`` and replace the file atomically, so two hooks firing
together never lose a count.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from quaere.jsonl import exclusive_lock

STATE_FILE = "hooks.json"
DEFAULT_MAX_BLOCKS = 50


class HookStateError(ValueError):
    """``.quaere/hooks.json`` is malformed; the message names the file and the field."""


class HookBudget(BaseModel):
    """When spent, the Stop hook lets the agent stop (goal unmet) so no loop runs forever."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    max_blocks: int = Field(default=DEFAULT_MAX_BLOCKS, ge=1)
    """Stop attempts the hook may block over the whole campaign (errors count too)."""
    max_sessions: int | None = Field(default=None, ge=1)
    """Agent sessions (distinct session ids) after which stops go through; None: no limit."""
    max_wall_s: float | None = Field(default=None, gt=0)
    """Seconds since the campaign's first hook call after which stops go through; None: no limit."""


class InstallRecord(BaseModel):
    """What ``quaere hooks install`` changed in one agent's settings file, so uninstall undoes exactly that."""

    model_config = ConfigDict(extra="forbid")
    settings_path: str
    original_text: str | None = Field(description="The file's text before install; None when it did not exist.")
    env_before: dict[str, str | None] = Field(
        default_factory=dict, description="Values of the env keys we set, as they were (None: absent)."
    )
    created_dirs: list[str] = Field(default_factory=list)
    extra_path: str | None = Field(default=None, description="A second file install edited (Codex: config.toml).")
    extra_original: str | None = Field(default=None, description="That file's text before; None: it did not exist.")
    extra_written: str | None = Field(default=None, description="What install wrote there (undone only if unchanged).")


class HookState(BaseModel):
    model_config = ConfigDict(extra="forbid")
    budget: HookBudget = HookBudget()
    blocks: int = 0
    sessions: list[str] = Field(default_factory=list)
    started_at: float | None = None
    campaign_start_asked: bool = False
    ledger_lines_seen: int = 0
    transcript_lines: dict[str, int] = Field(default_factory=dict, description="Lines of each transcript read.")
    asked_moments: list[str] = Field(default_factory=list, description="'<moment>@<ledger line>' already answered.")
    installs: dict[str, InstallRecord] = Field(
        default_factory=dict, description="By dialect name, ':user' added for user-level settings."
    )

    def budget_spent(self, now: float) -> tuple[str, float, float] | None:
        """(budget name, limit, used) of the first spent budget, or None."""
        budget = self.budget
        if self.blocks >= budget.max_blocks:
            return ("blocks", float(budget.max_blocks), float(self.blocks))
        if budget.max_sessions is not None and len(self.sessions) > budget.max_sessions:
            return ("sessions", float(budget.max_sessions), float(len(self.sessions)))
        if budget.max_wall_s is not None and self.started_at is not None:
            used = now - self.started_at
            if used >= budget.max_wall_s:
                return ("wall_s", budget.max_wall_s, used)
        return None


def state_path(state_dir: Path) -> Path:
    return state_dir / STATE_FILE


def read_state(state_dir: Path) -> HookState:
    """The state, or a fresh one when the file does not exist; :class:`HookStateError` when malformed."""
    path = state_path(state_dir)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return HookState()
    try:
        return HookState.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise HookStateError(f"{path}: not valid JSON: {exc}") from None
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"]) or "(top level)"
        raise HookStateError(f"{path}: field '{field}' {error['msg']}") from None


def _write(path: Path, state: HookState) -> None:
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(state.model_dump(mode="json"), indent=2) + "\n")
    os.replace(tmp, path)


def _locked(state_dir: Path) -> AbstractContextManager[None]:
    return exclusive_lock(state_dir / f"{STATE_FILE}.lock")


def update_state(state_dir: Path, change: Callable[[HookState], Any]) -> HookState:
    """Apply ``change`` (which mutates the state in place) under the lock; return the new state.

    A malformed file raises :class:`HookStateError` and is left untouched for a person to look at.
    """
    with _locked(state_dir):
        state = read_state(state_dir)
        change(state)
        _write(state_path(state_dir), state)
        return state
