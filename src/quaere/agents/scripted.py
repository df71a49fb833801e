"""An agent that replays canned actions: for tests, demos, and checking a campaign's wiring without a model.

A script is a list of actions, consumed in order across sessions:

- ``{"say": "text"}``: an assistant message (the moment detectors read it, as they read a model's);
- ``{"bash": "command"}``: a tool call, run in the workspace like the openai loop's ``bash`` tool;
- ``{"stop": "text"}``: the last message, then an attempt to end the turn. When the Stop hook lets it
  through, the session ends; when it blocks, the replay carries on with the next action.

When the script runs out the session ends (``completed``, detail ``script exhausted``). The file form,
for ``quaere run --agent scripted --script FILE``, is a JSON list of these objects.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from quaere.agents.base import EndReason, HookSet, SessionLimits, SessionOutcome
from quaere.agents.bash_tool import RunAs, run_bash
from quaere.jsonl import read_json_file
from quaere.trace import AgentMessage, ToolCall, ToolResult, cut


class ScriptError(ValueError):
    """A script file is malformed; the message names the file, the action and what was expected."""


@dataclass(frozen=True)
class Action:
    kind: Literal["say", "bash", "stop"]
    text: str


def parse_actions(items: Sequence[object], origin: str = "script") -> list[Action]:
    """Validate a list of ``{"say"|"bash"|"stop": str}`` objects."""
    actions: list[Action] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict) or len(item) != 1:
            raise ScriptError(f"{origin}: action {index}: expected an object with one key: say, bash or stop")
        ((kind, text),) = item.items()
        if kind not in ("say", "bash", "stop") or not isinstance(text, str):
            raise ScriptError(f"{origin}: action {index}: expected say, bash or stop with a string, got {kind!r}")
        actions.append(Action(kind, text))
    return actions


def load_script(path: Path) -> list[Action]:
    data = read_json_file(path, ScriptError, "no such script file")
    if not isinstance(data, list):
        raise ScriptError(f"{path}: expected a JSON list of actions")
    return parse_actions(data, str(path))


class ScriptedAgent:
    """Replays ``actions``; the position carries over from one session to the next."""

    name = "scripted"

    def __init__(
        self, actions: Sequence[Action], command_timeout_s: float = 600.0, run_as: RunAs | None = None
    ) -> None:
        self.actions = list(actions)
        self.position = 0
        self.command_timeout_s = command_timeout_s
        self.run_as = run_as

    def run_session(self, workspace: Path, opening: str, hooks: HookSet, limits: SessionLimits) -> SessionOutcome:
        hooks.on_prompt(opening)
        calls = 0
        while self.position < len(self.actions):
            action = self.actions[self.position]
            self.position += 1
            if action.kind == "say":
                hooks.record(AgentMessage(role="assistant", text=action.text))
            elif action.kind == "bash":
                calls += 1
                answer = self._bash(workspace, action.text, hooks)
                if answer is not None:
                    return SessionOutcome(EndReason.BUDGET, calls, detail=answer)
            else:
                hooks.record(AgentMessage(role="assistant", text=action.text))
                stop = hooks.on_stop(action.text)
                if stop.allow:
                    return SessionOutcome(EndReason.GOAL_MET if stop.goal_met else EndReason.COMPLETED, calls)
        return SessionOutcome(EndReason.COMPLETED, calls, detail="script exhausted")

    def _bash(self, workspace: Path, command: str, hooks: HookSet) -> str | None:
        """Run one command as a tool call; return the halt reason when a budget ended the session."""
        call_id = f"scripted_{uuid.uuid4().hex[:12]}"
        hooks.record(ToolCall(call_id=call_id, tool="bash", input=command))
        result = run_bash(command, workspace, self.command_timeout_s, run_as=self.run_as)
        text, digest = cut(result.output)
        hooks.record(ToolResult(call_id=call_id, output=text, output_sha256=digest, is_error=result.exit_code != 0))
        answer = hooks.after_tool("bash", {"command": command}, result.output)
        return answer.halt_reason or "budget spent" if answer.halt else None
