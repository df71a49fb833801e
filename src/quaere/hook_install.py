"""``quaere hooks install``: write the project-level hook settings of an agent, merged, and undo them.

Formats, as read on 2026-11-30:

* Claude Code: ``.claude/settings.json``, ``{"hooks": {"Stop": [{"matcher"?, "hooks": [{"type": "command",
  "command", "timeout"}]}]}, "env": {...}}``. Verified against the bundled CLI (2.1.x) by the end-to-end
  test. ``env.CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`` is set to the block budget: without it Claude Code ends a
  turn after 8 consecutive blocks, before quaere's own budget decides.
* Codex: ``.codex/hooks.json``, the same event/group/handler nesting (source: openai/codex
  ``codex-rs/config`` ``HooksFile``; the top level admits only ``hooks``; a handler's ``timeout`` is in
  seconds). Not run against a real Codex here: no Codex binary is available. Codex asks a person to trust
  new project hooks before they run, and versions before hooks became default need
  ``[features] codex_hooks = true`` in ``.codex/config.toml``.
* OpenHands: ``.openhands/hooks.json``, Claude Code's shape (PascalCase events under ``hooks``; source:
  docs.openhands.dev "Hooks" and the SDK's ``HookConfig``, which rejects unknown event names). A Stop hook
  blocks with exit code 2; the hook command is told ``--agent openhands`` so it answers that way, and its
  payload keys (``event_type``, ``working_dir``, ``message``) are mapped to Claude Code's. Not run against a
  real OpenHands here: whether it feeds ``additionalContext`` of PostToolUse back to the model is unconfirmed.

Our entries are recognised by their command (``... quaere hook <event> --agent <name>``), so a user's
own entries are never touched. What install changed is recorded in ``.quaere/hooks.json`` and uninstall
restores it exactly (the original bytes when nothing else changed in between).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from quaere.hook_state import HookBudget, HookState, InstallRecord, update_state

BLOCK_CAP_ENV = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"
STOP_TIMEOUT_S = 600  # the Stop hook may re-time near misses through the evaluator
OTHER_TIMEOUT_S = 120


class Agent(str, Enum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    OPENHANDS = "openhands"


class InstallError(ValueError):
    """A settings file cannot be merged (not JSON, or not of the expected shape); names file and field."""


SETTINGS_PATHS = {
    Agent.CLAUDE_CODE: Path(".claude/settings.json"),
    Agent.CODEX: Path(".codex/hooks.json"),
    Agent.OPENHANDS: Path(".openhands/hooks.json"),
}
# (event key in the settings file, our hook sub-command, matcher or None)
_EVENTS = (("Stop", "stop", None), ("PostToolUse", "post-tool", "*"), ("UserPromptSubmit", "prompt", None))
# Claude Code reports a tool that exited non-zero (``quaere eval`` on a failing candidate) as
# PostToolUseFailure, not PostToolUse; Codex and OpenHands have no such event (OpenHands rejects unknown ones).
_CLAUDE_ONLY_EVENTS = (("PostToolUseFailure", "post-tool", "*"),)
_OURS = re.compile(r"(?:^|[\s/'\"])quaere['\"]?\s+hook\s+(?:stop|post-tool|prompt)(?:\s|$)")


def default_launcher() -> str:
    """How settings call quaere: this interpreter with ``-m quaere``, immune to the agent's PATH."""
    return f"{shlex.quote(sys.executable)} -m quaere"


def is_ours(handler: Any) -> bool:
    return (
        isinstance(handler, dict) and isinstance(handler.get("command"), str) and bool(_OURS.search(handler["command"]))
    )


def _our_groups(agent: Agent, launcher: str) -> dict[str, dict[str, Any]]:
    groups = {}
    events = _EVENTS + (_CLAUDE_ONLY_EVENTS if agent is Agent.CLAUDE_CODE else ())
    for event, sub, matcher in events:
        timeout = STOP_TIMEOUT_S if sub == "stop" else OTHER_TIMEOUT_S
        # The Stop hook re-times near misses before they count as missed (the goal's rule).
        flags = " --retime" if sub == "stop" else ""
        command = f"{launcher} hook {sub} --agent {agent.value}{flags}"
        handler = {"type": "command", "command": command, "timeout": timeout}
        group: dict[str, Any] = {"hooks": [handler]}
        # Codex reads a matcher as a regex ("*" is invalid there) and ignores it on Stop/UserPromptSubmit.
        if matcher is not None and agent is not Agent.CODEX:
            group["matcher"] = matcher
        groups[event] = group
    return groups


def _load(path: Path) -> tuple[dict[str, Any], str | None]:
    if not path.exists():
        return {}, None
    text = path.read_text()
    if not text.strip():
        return {}, text
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InstallError(f"{path}: not valid JSON ({exc}); fix or move it, quaere will not overwrite it") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path}: expected a JSON object at the top level")
    return data, text


def _hooks_table(data: dict[str, Any], path: Path) -> dict[str, Any]:
    table = data.setdefault("hooks", {})
    if not isinstance(table, dict):
        raise InstallError(f"{path}: field 'hooks' must be an object of event names")
    for event, groups in table.items():
        if not isinstance(groups, list):
            raise InstallError(f"{path}: field 'hooks.{event}' must be a list of matcher groups")
    return table


def _strip_ours(table: dict[str, Any]) -> None:
    """Remove our handlers; drop groups and events that only held ours."""
    for event in list(table):
        kept = []
        for group in table[event]:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                hooks = [h for h in group["hooks"] if not is_ours(h)]
                if not hooks and len(hooks) != len(group["hooks"]):
                    continue
                group = dict(group, hooks=hooks)
            kept.append(group)
        if kept:
            table[event] = kept
        else:
            del table[event]


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"


@dataclass(frozen=True)
class InstallResult:
    settings_path: Path
    changed: bool
    notes: tuple[str, ...]


def install_hooks(
    root: Path, agent: Agent, budget: HookBudget, launcher: str | None = None, settings: Path | None = None
) -> InstallResult:
    """Merge our three hooks into ``agent``'s project settings under ``root`` (or into ``settings``, a file
    outside the workspace such as Claude Code's managed settings, which the agent's user cannot edit);
    idempotent. The budget goes to ``.quaere/hooks.json``; for Claude Code the block cap env var follows it.
    """
    path = settings or root / SETTINGS_PATHS[agent]
    data, original = _load(path)
    table = _hooks_table(data, path)
    _strip_ours(table)
    for event, group in _our_groups(agent, launcher or default_launcher()).items():
        table.setdefault(event, []).append(group)
    env_before: dict[str, str | None] = {}
    if agent is Agent.CLAUDE_CODE:
        env = data.setdefault("env", {})
        if not isinstance(env, dict):
            raise InstallError(f"{path}: field 'env' must be an object of strings")
        env_before[BLOCK_CAP_ENV] = env.get(BLOCK_CAP_ENV)
        env[BLOCK_CAP_ENV] = str(budget.max_blocks)
    created = [str(d) for d in (path.parent,) if not d.exists()]
    text = _dump(data)
    changed = text != original

    def record(state: HookState) -> None:
        state.budget = budget
        previous = state.installs.get(agent.value)
        if previous is None:  # the first install is the one to undo to
            state.installs[agent.value] = InstallRecord(
                settings_path=str(path), original_text=original, env_before=env_before, created_dirs=created
            )

    update_state(root / ".quaere", record)
    if changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    notes = []
    if agent is Agent.CODEX:
        notes.append(
            "Codex asks you to review and trust new project hooks (/hooks) before they run; Codex "
            "versions where hooks are not on by default need [features] codex_hooks = true in .codex/config.toml."
        )
    if agent is Agent.OPENHANDS:
        notes.append("OpenHands: format from its documentation, not run here against a real OpenHands.")
    return InstallResult(settings_path=path, changed=changed, notes=tuple(notes))


def uninstall_hooks(root: Path, agent: Agent) -> InstallResult:
    """Remove our entries (and restore the env values install replaced); the original bytes when possible."""
    path = root / SETTINGS_PATHS[agent]
    taken: list[InstallRecord] = []

    def forget(state: HookState) -> None:
        record = state.installs.pop(agent.value, None)
        if record is not None:
            taken.append(record)

    update_state(root / ".quaere", forget)
    record = taken[0] if taken else None
    path = Path(record.settings_path) if record is not None else path  # where install wrote, even outside root
    data, current = _load(path)
    if current is None:
        return InstallResult(settings_path=path, changed=False, notes=("nothing to remove: no settings file",))
    table = _hooks_table(data, path)
    _strip_ours(table)
    if not table:
        del data["hooks"]
    if record is not None:
        env = data.get("env")
        for key, value in record.env_before.items():
            if isinstance(env, dict):
                if value is None:
                    env.pop(key, None)
                else:
                    env[key] = value
        if isinstance(env, dict) and not env and "env" not in _load_original(record):
            del data["env"]
    changed = _finish_uninstall(path, data, current, record)
    return InstallResult(settings_path=path, changed=changed, notes=())


def _load_original(record: InstallRecord) -> dict[str, Any]:
    if not record.original_text or not record.original_text.strip():
        return {}
    try:
        data = json.loads(record.original_text)
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def _finish_uninstall(path: Path, data: dict[str, Any], current: str, record: InstallRecord | None) -> bool:
    if record is not None and data == _load_original(record):
        if record.original_text is None:
            path.unlink()
            for folder in record.created_dirs:
                if Path(folder).is_dir() and not any(Path(folder).iterdir()):
                    Path(folder).rmdir()
        else:
            path.write_text(record.original_text)
        return True
    text = _dump(data)
    if text != current:
        path.write_text(text)
        return True
    return False
