"""OpenHands' hook dialect (verified against ``openhands-sdk`` 1.58.2 under Python 3.12).

Settings: ``.openhands/hooks.json`` in the project, else ``~/.openhands/hooks.json`` (or
``$OH_PERSISTENCE_DIR/hooks.json``; the first that exists is read, so a project file shadows the user's).
The SDK does not read them by itself: the caller passes ``hook_config=HookConfig.load(working_dir=...)``
to its Conversation (:mod:`quaere.agents.openhands_sdk` does, and relays post-tool questions). Claude Code's
shape; unknown event names are rejected. A Stop is blocked by exit code 2 (and ``"decision": "deny"``); context
is read from a top-level ``additionalContext``. The payload names its keys ``event_type``, ``working_dir``,
``tool_response`` (an object) and ``message``; it carries no transcript.
"""

from __future__ import annotations

from pathlib import Path

from quaere.hooks.dialect import DialectSpec, Event, EventEntry, HookDialect, Scope, WireEvent


def notes(root: Path, scope: Scope) -> tuple[str, ...]:
    shadow = (
        " A project .openhands/hooks.json shadows this user-level file: OpenHands reads the first it finds."
        if scope is Scope.USER
        else ""
    )
    return (
        "OpenHands' SDK loads hooks only when the caller passes hook_config=HookConfig.load(working_dir=...); "
        "quaere.agents.openhands_sdk.quaere_conversation(...) does that and shows post-tool questions to the "
        "model (the SDK alone only logs them)." + shadow,
    )


SPEC = DialectSpec(
    dialect=HookDialect.OPENHANDS,
    project_file=Path(".openhands/hooks.json"),
    user_file=Path(".openhands/hooks.json"),
    events=(
        EventEntry(WireEvent.STOP, Event.STOP),
        EventEntry(WireEvent.POST_TOOL_USE, Event.POST_TOOL, "*"),
        EventEntry(WireEvent.USER_PROMPT_SUBMIT, Event.PROMPT),
    ),
    user_dir_env="OH_PERSISTENCE_DIR",
    block_exit_code=2,
    block_decision="deny",
    top_level_context=True,
    payload_keys=(("event_type", "hook_event_name"), ("working_dir", "cwd")),
    notes=notes,
)
