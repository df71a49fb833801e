"""The hooks' own state in a ``hooks.json``: budgets, counters and what ``hooks install`` changed.

Hooks run as separate short processes (one per event), so everything they must remember between calls
lives in this file: blocks answered so far, sessions seen, when the campaign started, whether the
campaign-start question was asked, how many ledger lines the post-tool hook has already looked at.
Updates hold an exclusive lock on ``hooks.json.lock`` and replace the file atomically, so two hooks firing
together never lose a count.

The Stop hook's copy lives in the evaluation store and is signed (:class:`StateFile` with a signer): an
agent that raises ``blocks`` there without the key is detected, and the state starts over, which can only
make the hook block longer. The workspace's ``.quaere/hooks.json`` keeps what ``hooks install`` changed;
its counters and budget decide nothing. The budget itself is pinned in the store's registration.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from quaere.jsonl import exclusive_lock
from quaere.signing import BadSignature, Signer
from quaere.validation import describe_first

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
    tampered_resets: int = Field(default=0, description="Times a signed state failed its check and started over.")

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


@dataclass(frozen=True)
class StateFile:
    """Where a hook state lives; with a ``signer`` the file is signed and checked on every read."""

    folder: Path
    signer: Signer | None = None

    @property
    def path(self) -> Path:
        return self.folder / STATE_FILE


def _where(where: Path | StateFile) -> StateFile:
    return where if isinstance(where, StateFile) else StateFile(where)


def state_path(state_dir: Path) -> Path:
    return state_dir / STATE_FILE


def _parse(path: Path, data: Any) -> HookState:
    try:
        return HookState.model_validate(data)
    except ValidationError as exc:
        raise HookStateError(f"{path}: {describe_first(exc)}") from None


def read_state(where: Path | StateFile) -> HookState:
    """The state, or a fresh one when the file does not exist; :class:`HookStateError` when malformed.

    A signed state whose check fails (edited, unsigned, torn) reads as a fresh state with
    ``tampered_resets`` counted: its counters can no longer be believed, and fresh ones only block longer.
    """
    where = _where(where)
    try:
        text = where.path.read_text()
    except FileNotFoundError:
        return HookState()
    if where.signer is not None:
        try:
            payload = where.signer.verify(json.loads(text))
        except (json.JSONDecodeError, BadSignature):
            return HookState(tampered_resets=_resets_of(text) + 1)
        return _parse(where.path, payload)
    try:
        return _parse(where.path, json.loads(text))
    except json.JSONDecodeError as exc:
        raise HookStateError(f"{where.path}: not valid JSON: {exc}") from None


def _resets_of(text: str) -> int:
    """The reset count a tampered file still shows, so resets keep counting up (best effort)."""
    try:
        data = json.loads(text)
        value = (data.get("payload") or data).get("tampered_resets", 0)
        return int(value) if isinstance(value, int) else 0
    except (ValueError, AttributeError, TypeError):
        return 0


def _write(where: StateFile, state: HookState) -> None:
    data: Any = state.model_dump(mode="json")
    if where.signer is not None:
        data = where.signer.sign(data)
    tmp = where.path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, where.path)


def _locked(where: StateFile) -> AbstractContextManager[None]:
    return exclusive_lock(where.folder / f"{STATE_FILE}.lock")


def update_state(where: Path | StateFile, change: Callable[[HookState], Any]) -> HookState:
    """Apply ``change`` (which mutates the state in place) under the lock; return the new state.

    A malformed unsigned file raises :class:`HookStateError` and is left untouched for a person to look at.
    """
    where = _where(where)
    with _locked(where):
        state = read_state(where)
        change(state)
        _write(where, state)
        return state
