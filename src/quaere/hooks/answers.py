"""Answers in each agent's hook dialect, and its payload's keys mapped to Claude Code's.

How a dialect blocks a stop and adds context is in its :class:`~quaere.hooks.dialect.DialectSpec`
(Claude Code and Codex: ``{"decision": "block", "reason"}`` on exit 0; OpenHands: exit code 2 and
``"decision": "deny"``). Context goes in ``hookSpecificOutput.additionalContext`` (and at the top level
where the dialect reads it there). An allowed stop carries a ``systemMessage`` for the person watching.
Also the safe answer when nothing can be judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from quaere.hooks.dialect import HookDialect, WireEvent, all_specs, spec_of
from quaere.hooks.state import HookStateError, StateFile, update_state
from quaere.records import StopStatus
from quaere.trace import ErrorEvent, StopDecision, TraceWriter


@dataclass(frozen=True)
class HookAnswer:
    """What the hook command prints (JSON on stdout, a note on stderr) and its exit code."""

    output: dict[str, Any] | None
    exit_code: int = 0
    stderr: str = ""
    decision: Literal["block", "allow", "none"] = "none"
    text: str = ""
    """What the answer says, in no dialect: a blocked stop's reason, an allowed stop's message, the context
    added to a prompt or a tool result. In-process callers read this, never ``output``."""
    goal_status: StopStatus | None = None
    """A stop's status as its decision was recorded; None on an answer to any other event."""


def stop_decision(answer: HookAnswer, session: int = 0, reason: str | None = None) -> StopDecision:
    """The trace's record of a stop ``answer``: its decision and goal status as the answer carries them;
    ``reason`` when the record keeps a shorter text than the answer shows (default: the answer's text)."""
    if answer.decision not in ("block", "allow") or answer.goal_status is None:
        raise ValueError(f"not a stop answer: decision {answer.decision!r}, status {answer.goal_status!r}")
    return StopDecision(session=session, decision=answer.decision, goal_status=answer.goal_status,
                        reason=answer.text if reason is None else reason)


def normalize_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with Claude Code's key names (what Claude Code and Codex send is returned as is)."""
    out = dict(payload)
    for spec in all_specs():
        for theirs, ours in spec.payload_keys:
            if theirs in out and ours not in out:
                out[ours] = out[theirs]
    message = out.get("message")
    if isinstance(message, str):
        if out.get("hook_event_name") == WireEvent.STOP.value:
            out.setdefault("last_assistant_message", message)
        elif out.get("hook_event_name") == WireEvent.USER_PROMPT_SUBMIT.value:
            out.setdefault("prompt", message)
    return out


# -- answers in each agent's dialect --------------------------------------------------------------------


def block_answer(agent: HookDialect, reason: str, stderr: str = "",
                 goal_status: StopStatus | None = None) -> HookAnswer:
    spec = spec_of(agent)
    # A dialect that blocks by exit code reads stderr as the reason: never leave it empty.
    note = stderr or (reason if spec.block_exit_code else "")
    return HookAnswer({"decision": spec.block_decision, "reason": reason}, spec.block_exit_code, note, "block",
                      text=reason, goal_status=goal_status)


def allow_answer(message: str, stderr: str = "", goal_status: StopStatus | None = None) -> HookAnswer:
    return HookAnswer({"systemMessage": message}, 0, stderr, "allow", text=message, goal_status=goal_status)


def context_answer(agent: HookDialect, event: WireEvent, text: str, stderr: str = "") -> HookAnswer:
    output: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": event.value, "additionalContext": text}}
    if spec_of(agent).top_level_context:
        output["additionalContext"] = text
    return HookAnswer(output, 0, stderr, text=text)


def broken_answer(
    event: WireEvent, message: str, agent: HookDialect, state_dir: Path | StateFile | None, session_id: str = ""
) -> HookAnswer:
    """The safe answer when the hook cannot judge (bad input, no workspace, unreadable state).

    Stop: block with the explanation, counted against the block budget of the hook state ``state_dir`` so
    a broken set-up does not trap the agent for ever. Where no hook state can be updated the block is not
    counted and the stop is still refused: the count is never kept anywhere else (a per-session file in
    the temp folder could be pre-filled by any process to let the agent stop; red team round 3). Other
    events: no answer. Always a clear message on stderr. ``session_id`` is accepted for older callers.
    """
    del session_id  # the per-session temp-folder counter is gone (see above)
    event = WireEvent(event)  # a bare "Stop" from an older caller must still block, not pass as another event
    text = f"quaere hook {event.value}: {message}"
    if event is not WireEvent.STOP:
        return HookAnswer(None, 0, text)
    counted = _count_error_block(state_dir)
    if isinstance(counted, str):
        reason = (
            f"{text}. The goal could not be checked, so stopping is not accepted yet; this block is not counted "
            f"against a budget ({counted}). Fix the set-up (run `quaere goal` to see the problem), or remove the "
            "hooks (`quaere hooks install --uninstall`)."
        )
        return block_answer(agent, reason, text, goal_status=StopStatus.ERROR)
    used, limit = counted
    if used > limit:
        return allow_answer(f"{text}. The error budget ({limit} blocks) is spent: letting the agent stop.", text,
                            goal_status=StopStatus.ERROR)
    reason = (
        f"{text}. The goal could not be checked, so stopping is not accepted yet (block {used} of {limit}); "
        "fix the set-up (run `quaere goal` to see the problem)."
    )
    return block_answer(agent, reason, text, goal_status=StopStatus.ERROR)


def _count_error_block(state_dir: Path | StateFile | None) -> tuple[int, int] | str:
    """(blocks used, limit) after counting one more in the hook state, or why it could not be counted.

    Fail-closed: an uncounted block still blocks, so nothing outside the hook state (which an agent
    cannot raise where it is signed) brings the agent nearer to the stop that a spent budget allows.
    """
    folder = state_dir.folder if isinstance(state_dir, StateFile) else state_dir
    if state_dir is None or folder is None or not folder.is_dir():
        return f"no hook state folder is known{f' ({folder} is not a folder)' if folder is not None else ''}"
    try:
        state = update_state(state_dir, lambda s: setattr(s, "blocks", s.blocks + 1))
    except (HookStateError, OSError) as exc:
        return f"the hook state in {folder} could not be updated: {exc}"
    return state.blocks, state.budget.max_blocks


def trace_broken(trace: Path, event: WireEvent, message: str, answer: HookAnswer) -> None:
    """Put a hook failure and the safe answer given on the record (best effort: the trace may be the failure)."""
    try:
        event = WireEvent(event)  # as in broken_answer: a bare "Stop" is still the Stop event
        writer = TraceWriter(trace)
        writer.write(ErrorEvent(where=f"hook {event.value}", message=message))
        if event is WireEvent.STOP and answer.decision in ("block", "allow"):
            writer.write(stop_decision(answer))  # broken_answer's stop answers carry goal status "error"
    except (OSError, ValueError):
        pass
