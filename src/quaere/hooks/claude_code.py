"""Claude Code's hook dialect (verified against the CLI bundled in claude-agent-sdk, 2.1.x).

Settings: ``.claude/settings.json`` in the project, ``~/.claude/settings.json`` for the user (Claude Code
merges both); ``{"hooks": {"Stop": [{"matcher"?, "hooks": [{"type": "command", "command", "timeout"}]}]},
"env": {...}}``. A stop is blocked with ``{"decision": "block", "reason"}`` on exit 0; context goes in
``hookSpecificOutput.additionalContext``. A tool that exited non-zero is reported as PostToolUseFailure.
Claude Code ends a turn after ``CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`` consecutive blocks (8 when unset), so
the settings' ``env`` sets it to quaere's block budget. The transcript (``transcript_path``) holds one
JSON object per line; the model's words are ``{"type": "assistant", "message": {"content": [{"type":
"text", "text"}]}}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quaere.hooks.dialect import DialectSpec, Event, EventEntry, HookDialect, WireEvent

BLOCK_CAP_ENV = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"


def transcript_text(line: dict[str, Any]) -> str:
    if line.get("type") != "assistant" or line.get("isSidechain"):
        return ""
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(p for p in parts if isinstance(p, str) and p.strip()).strip()


SPEC = DialectSpec(
    dialect=HookDialect.CLAUDE_CODE,
    project_file=Path(".claude/settings.json"),
    user_file=Path(".claude/settings.json"),
    events=(
        EventEntry(WireEvent.STOP, Event.STOP),
        EventEntry(WireEvent.POST_TOOL_USE, Event.POST_TOOL, "*"),
        EventEntry(WireEvent.POST_TOOL_USE_FAILURE, Event.POST_TOOL, "*"),
        EventEntry(WireEvent.USER_PROMPT_SUBMIT, Event.PROMPT),
    ),
    block_cap_env=BLOCK_CAP_ENV,
    transcript_text=transcript_text,
)
