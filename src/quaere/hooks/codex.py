"""Codex's hook dialect (verified against ``@openai/codex`` 0.171.0 from npm).

Settings: ``.codex/hooks.json`` in the project, ``$CODEX_HOME/hooks.json`` (``~/.codex``) for the user;
Claude Code's event/group/handler nesting, nothing else at the top level, a handler's ``timeout`` in
seconds, a matcher read as a regex ("*" is invalid, and Stop/UserPromptSubmit ignore it). Answers as
Claude Code's. The hooks feature is ``[features] hooks = true`` (on by default since it became stable;
``codex_hooks`` is the legacy alias).

Codex runs a hook only when both hold, and otherwise runs none, silently:

* the project is trusted (project settings are not loaded otherwise): ``codex --trust`` once, or
  ``[projects."<root>"] trust_level = "trusted"`` in ``~/.codex/config.toml``;
* the hook is trusted: reviewed and accepted in ``/hooks`` (Codex stores its hash), or the run passes
  ``--dangerously-bypass-hook-trust``.

The transcript is Codex's rollout file: one ``{"type": "response_item", "payload": {...}}`` per line; the
model's words are payloads ``{"type": "message", "role": "assistant", "content": [{"type":
"output_text", "text"}]}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quaere.hooks.dialect import DialectSpec, Event, EventEntry, HookDialect, Scope, WireEvent

FEATURE_KEY = "hooks"


def transcript_text(line: dict[str, Any]) -> str:
    payload = line.get("payload")
    if line.get("type") != "response_item" or not isinstance(payload, dict):
        return ""
    if payload.get("type") != "message" or payload.get("role") != "assistant":
        return ""
    content = payload.get("content")
    if not isinstance(content, list):
        return ""
    parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "output_text"]
    return "\n".join(p for p in parts if isinstance(p, str) and p.strip()).strip()


def notes(root: Path, scope: Scope) -> tuple[str, ...]:
    project = (
        f"trust the project once (`codex --trust` in {root}, or "
        f'[projects."{root.resolve()}"] trust_level = "trusted" in ~/.codex/config.toml) and '
        if scope is Scope.PROJECT
        else ""
    )
    return (
        f"Codex runs these hooks only when you {project}trust the hooks: review and accept them in /hooks "
        "(Codex stores their hash), or, for unattended runs, pass --dangerously-bypass-hook-trust "
        "(e.g. `codex exec --trust --dangerously-bypass-hook-trust ...`). Without both it silently runs none.",
    )


def with_hooks_feature(text: str | None) -> str | None:
    """``config.toml`` text with ``[features] hooks = true``, or None when nothing needs changing.

    A value the user set (even ``false``) is left as it is; the file is edited as text so that its
    comments and layout survive.
    """
    import tomllib

    text = text or ""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML ({exc})") from None
    features = data.get("features")
    if isinstance(features, dict) and FEATURE_KEY in features:
        return None
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.strip() == "[features]":
            lines.insert(index + 1, f"{FEATURE_KEY} = true\n")
            return "".join(lines)
    if "features" in data:  # an inline table or dotted keys: not ours to rewrite
        return None
    separator = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    return f"{text}{separator}[features]\n{FEATURE_KEY} = true\n"


SPEC = DialectSpec(
    dialect=HookDialect.CODEX,
    project_file=Path(".codex/hooks.json"),
    user_file=Path(".codex/hooks.json"),
    events=(
        EventEntry(WireEvent.STOP, Event.STOP),
        EventEntry(WireEvent.POST_TOOL_USE, Event.POST_TOOL),
        EventEntry(WireEvent.USER_PROMPT_SUBMIT, Event.PROMPT),
    ),
    transcript_text=transcript_text,
    notes=notes,
    user_dir_env="CODEX_HOME",
    extra_file="config.toml",
    extra_edit=with_hooks_feature,
)
