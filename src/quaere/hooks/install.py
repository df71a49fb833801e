"""``quaere hooks install``: write an agent's hook settings, merged with what is there, and undo them.

Each dialect's files and events come from its :class:`~quaere.hooks.dialect.DialectSpec`. Settings go in
the project (``Scope.PROJECT``), or in the user's home (``Scope.USER``) where the agent reads user-level
hooks: there an agent that edits its workspace cannot remove them. User-level commands carry
``--root <workspace>`` so that they stay silent in every other project.

Our entries are recognised by their command (``... quaere hook <event> --agent <name>``), so a user's
own entries are never touched. What install changed is recorded in ``.quaere/hooks.json`` and uninstall
restores it exactly (the original bytes when nothing else changed in between).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quaere.hooks.dialect import DialectSpec, Event, HookDialect, Scope, spec_of
from quaere.hooks.state import HookBudget, HookState, InstallRecord, update_state

STOP_TIMEOUT_S = 600  # the Stop hook may run the goal's confirming evaluation (a full one)
OTHER_TIMEOUT_S = 120


class InstallError(ValueError):
    """A settings file cannot be merged (not JSON, or not of the expected shape); names file and field."""


_OURS = re.compile(r"(?:^|[\s/'\"])quaere['\"]?\s+hook\s+(?:stop|post-tool|prompt)(?:\s|$)")


def default_launcher() -> str:
    """How settings call quaere: this interpreter with ``-m quaere``, immune to the agent's PATH."""
    return f"{shlex.quote(sys.executable)} -m quaere"


def is_ours(handler: Any) -> bool:
    return (
        isinstance(handler, dict) and isinstance(handler.get("command"), str) and bool(_OURS.search(handler["command"]))
    )


def hook_command(launcher: str, dialect: HookDialect, event: Event, root: Path | None = None) -> str:
    """The command line of one of our hooks; ``root`` limits it to that workspace (user-level settings)."""
    # --retime is accepted and ignored by `quaere hook stop` since the goal's confirmation replaced re-timing.
    flags = " --retime" if event is Event.STOP else ""
    if root is not None:
        flags += f" --root {shlex.quote(str(root.resolve()))}"
    return f"{launcher} hook {event.value} --agent {dialect.value}{flags}"


def _our_groups(spec: DialectSpec, launcher: str, root: Path | None) -> dict[str, dict[str, Any]]:
    groups = {}
    for entry in spec.events:
        timeout = STOP_TIMEOUT_S if entry.event is Event.STOP else OTHER_TIMEOUT_S
        command = hook_command(launcher, spec.dialect, entry.event, root)
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}
        if entry.matcher is not None:
            group["matcher"] = entry.matcher
        groups[entry.key.value] = group
    return groups


def record_key(dialect: HookDialect, scope: Scope) -> str:
    return dialect.value if scope is Scope.PROJECT else f"{dialect.value}:{scope.value}"


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


@dataclass(frozen=True)
class Target:
    """Where install writes: the workspace (its budget and record) and the settings' scope."""

    root: Path
    dialect: HookDialect
    scope: Scope = Scope.PROJECT
    home: Path = Path("~")  # the user's home folder, for Scope.USER (the CLI passes Path.home())
    env: Mapping[str, str] = field(default_factory=dict)  # the environment, for a dialect's folder variable
    settings_file: Path | None = None
    """An explicit settings file instead of the scope's, e.g. Claude Code's managed settings
    (/etc/claude-code/managed-settings.json): owned by root, out of reach of an agent running as itself."""

    @property
    def spec(self) -> DialectSpec:
        return spec_of(self.dialect)

    @property
    def settings(self) -> Path:
        if self.settings_file is not None:
            return self.settings_file
        try:
            return self.spec.settings_path(self.root, self.scope, self.home.expanduser(), self.env)
        except ValueError as exc:
            raise InstallError(str(exc)) from None


def install_hooks(target: Target, budget: HookBudget, launcher: str | None = None) -> InstallResult:
    """Merge our hooks into the target's settings; idempotent.

    The budget goes to ``.quaere/hooks.json``; where the dialect has a block-cap env key it follows it.
    """
    spec, path = target.spec, target.settings
    data, original = _load(path)
    table = _hooks_table(data, path)
    _strip_ours(table)
    only_root = target.root if target.scope is Scope.USER else None
    for event, group in _our_groups(spec, launcher or default_launcher(), only_root).items():
        table.setdefault(event, []).append(group)
    env_before: dict[str, str | None] = {}
    if spec.block_cap_env is not None:
        env = data.setdefault("env", {})
        if not isinstance(env, dict):
            raise InstallError(f"{path}: field 'env' must be an object of strings")
        env_before[spec.block_cap_env] = env.get(spec.block_cap_env)
        env[spec.block_cap_env] = str(budget.max_blocks)
    extra = _extra_edit(spec, path)
    text = _dump(data)
    changed = text != original or extra is not None

    def record(state: HookState) -> None:
        state.budget = budget
        key = record_key(target.dialect, target.scope)
        if key not in state.installs:  # the first install is the one to undo to
            state.installs[key] = InstallRecord(
                settings_path=str(path),
                original_text=original,
                env_before=env_before,
                created_dirs=[str(path.parent)] if not path.parent.exists() else [],
                extra_path=str(extra[0]) if extra else None,
                extra_original=extra[1] if extra else None,
                extra_written=extra[2] if extra else None,
            )

    update_state(target.root / ".quaere", record)
    if text != original:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if extra is not None:
        extra[0].write_text(extra[2])
    return InstallResult(settings_path=path, changed=changed, notes=spec.notes(target.root, target.scope))


def _extra_edit(spec: DialectSpec, settings: Path) -> tuple[Path, str | None, str] | None:
    """(path, text before, text to write) of the dialect's second file, or None when it needs no change."""
    if spec.extra_file is None or spec.extra_edit is None:
        return None
    path = settings.parent / spec.extra_file
    before = path.read_text() if path.exists() else None
    try:
        after = spec.extra_edit(before)
    except ValueError as exc:
        raise InstallError(f"{path}: {exc}; fix or move it, quaere will not overwrite it") from None
    return None if after is None else (path, before, after)


def uninstall_hooks(target: Target) -> InstallResult:
    """Remove our entries (and restore what install replaced); the original bytes when possible."""
    path = target.settings
    taken: list[InstallRecord] = []

    def forget(state: HookState) -> None:
        record = state.installs.pop(record_key(target.dialect, target.scope), None)
        if record is not None:
            taken.append(record)

    update_state(target.root / ".quaere", forget)
    record = taken[0] if taken else None
    if record is not None:
        _undo_extra(record)
        path = Path(record.settings_path)  # where install wrote, also a file outside the workspace
    data, current = _load(path)
    if current is None:
        return InstallResult(settings_path=path, changed=False, notes=("nothing to remove: no settings file",))
    table = _hooks_table(data, path)
    _strip_ours(table)
    if not table:
        del data["hooks"]
    if record is not None:
        _restore_env(data, record)
    changed = _finish_uninstall(path, data, current, record)
    return InstallResult(settings_path=path, changed=changed, notes=())


def _restore_env(data: dict[str, Any], record: InstallRecord) -> None:
    env = data.get("env")
    if not isinstance(env, dict):
        return
    for key, value in record.env_before.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    if not env and "env" not in _load_original(record):
        del data["env"]


def _undo_extra(record: InstallRecord) -> None:
    """Put the second file back as it was, unless someone changed it after install (then leave it)."""
    if record.extra_path is None:
        return
    path = Path(record.extra_path)
    if not path.exists() or path.read_text() != record.extra_written:
        return
    if record.extra_original is None:
        path.unlink()
    else:
        path.write_text(record.extra_original)


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
