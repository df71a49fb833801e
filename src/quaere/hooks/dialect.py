"""Hook dialects: how each agent that runs command hooks is configured and spoken to.

A :class:`HookDialect` names an agent's hook protocol (not a coding agent of :mod:`quaere.agents`, which
quaere drives itself). Everything that differs between dialects is one :class:`DialectSpec`, defined in
the dialect's own module (``quaere.hooks.claude_code``, ``.codex``, ``.openhands``): where its settings
live (in the project, and at user level where the agent reads one), which events it knows, how it blocks
a stop and adds context, its payload's key names, and how its transcript records the model's words.
Adding an agent is adding a module and a value here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any


class HookDialect(str, Enum):
    """An agent's hook protocol, as named on ``quaere hook --agent`` and ``quaere hooks install --agent``."""

    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    OPENHANDS = "openhands"


class Scope(str, Enum):
    """Where ``quaere hooks install`` writes an agent's settings."""

    PROJECT = "project"  # inside the workspace: the agent could edit it away
    USER = "user"  # in the user's home: out of the workspace the agent works in


class Event(str, Enum):
    """quaere's hook sub-commands (``quaere hook <value>``)."""

    STOP = "stop"
    POST_TOOL = "post-tool"
    PROMPT = "prompt"


class WireEvent(str, Enum):
    """Hook event names as the agents write them: settings-file keys and payloads' ``hook_event_name``
    (PascalCase in every dialect so far)."""

    STOP = "Stop"
    POST_TOOL_USE = "PostToolUse"
    POST_TOOL_USE_FAILURE = "PostToolUseFailure"  # Claude Code: a tool call that failed
    USER_PROMPT_SUBMIT = "UserPromptSubmit"


def tool_failed(payload: Mapping[str, Any]) -> bool:
    """Whether a post-tool payload reports a failed call (Claude Code's own event for it)."""
    return payload.get("hook_event_name") == WireEvent.POST_TOOL_USE_FAILURE.value


@dataclass(frozen=True)
class EventEntry:
    """One event of an agent's settings file and the quaere hook that answers it."""

    key: WireEvent  # the event's name in the settings file
    event: Event
    matcher: str | None = None  # None: no matcher in the group


@dataclass(frozen=True)
class DialectSpec:
    """Everything dialect-specific; see the module docstring."""

    dialect: HookDialect
    project_file: Path  # relative to the project root
    user_file: Path | None  # relative to the home folder; None: the agent reads no user-level hooks
    events: tuple[EventEntry, ...]
    block_exit_code: int = 0  # exit code of an answer that blocks a stop
    block_decision: str = "block"  # the "decision" value that blocks a stop
    top_level_context: bool = False  # also put additionalContext at the top level of the answer
    payload_keys: tuple[tuple[str, str], ...] = ()  # (their key, Claude Code's key) renames of the payload
    block_cap_env: str | None = None  # settings "env" key that caps consecutive blocks (set to our budget)
    transcript_text: Callable[[dict[str, Any]], str] = field(default=lambda line: "")
    """The model's words on one parsed transcript line ("" when the line holds none)."""
    notes: Callable[[Path, Scope], tuple[str, ...]] = field(default=lambda root, scope: ())
    """What install tells the user: steps the agent needs that quaere cannot take (trust, loading)."""
    user_dir_env: str | None = None  # a variable that, when set, names the folder of the user-level file
    extra_file: str | None = None  # a second file beside the settings file that install edits
    extra_edit: Callable[[str | None], str | None] | None = None
    """The extra file's new text from its current text (None: absent), or None to leave it as it is;
    ValueError when it cannot be read."""

    def settings_path(self, root: Path, scope: Scope, home: Path, env: Mapping[str, str]) -> Path:
        """The settings file: in the project, or the user's (``env``: the environment, for ``user_dir_env``)."""
        if scope is Scope.PROJECT:
            return root / self.project_file
        if self.user_file is None:
            raise ValueError(f"{self.dialect.value} reads no user-level hook settings; use --scope project")
        if self.user_dir_env and env.get(self.user_dir_env):
            return Path(env[self.user_dir_env]) / self.user_file.name
        return home / self.user_file


def spec_of(dialect: HookDialect) -> DialectSpec:
    """The spec in module ``quaere.hooks.<dialect with '_' for '-'>``."""
    module = importlib.import_module(f"quaere.hooks.{dialect.value.replace('-', '_')}")
    return module.SPEC


def all_specs() -> tuple[DialectSpec, ...]:
    return tuple(spec_of(d) for d in HookDialect)
