"""The seam between a campaign and a coding agent.

An :class:`Agent` runs one session: it gets the workspace, an opening message and a :class:`HookSet`, and
works with its own tools until it stops (and the stop is allowed) or the hook set says a budget is spent.
The hook set is the campaign's side of the session: the trace, the goal behind the Stop hook, the
questions asked at moments, and the budgets. Every backend (Claude Agent SDK, an OpenAI-compatible loop,
the scripted replayer) drives the same four calls, so the campaign never knows which agent it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

# Re-exported: their home is quaere.records, since the trace records them.
from quaere.records import CampaignEnd as CampaignEnd
from quaere.records import EndReason as EndReason
from quaere.trace import Event


@dataclass(frozen=True)
class StopAnswer:
    """The Stop hook's answer to a stop attempt."""

    allow: bool
    reason: str = ""  # when blocked: what the agent is told (failing scenarios, numbers, a question)
    goal_met: bool = False


@dataclass(frozen=True)
class ToolAnswer:
    """The campaign's answer after one tool call."""

    context: str = ""  # a question to show the agent after the tool result ("" for none)
    halt: bool = False  # a budget is spent: the session must end now
    halt_reason: str = ""


@dataclass(frozen=True)
class SessionLimits:
    """What is left of the campaign's budgets when a session starts (None: no limit)."""

    cost_usd: float | None = None  # a backend that can cap its own spending (the Claude SDK) does so


@dataclass(frozen=True)
class SessionOutcome:
    """What one session did."""

    reason: EndReason
    tool_calls: int
    cost_usd: float | None = None  # only when the backend reports it (the Claude SDK does)
    detail: str = ""  # on an error: its cause, the first line fit to show on a terminal
    started: bool = True  # False: the agent never got going (refused to start, no CLI, no endpoint, bad
    # key); the same settings would fail again, so the campaign ends at once instead of retrying


class HookSet(Protocol):
    """The campaign's side of a session. Backends call these, in this order of events."""

    def record(self, event: Event) -> None:
        """Append one event (message, tool call, tool result) to the trace, secrets redacted."""
        ...

    def on_prompt(self, prompt: str) -> str:
        """A user message is about to reach the agent; return extra context to add ("" for none)."""
        ...

    def after_tool(self, tool: str, tool_input: dict[str, Any], output: str) -> ToolAnswer:
        """One tool call finished (already recorded): count it, run the moment detectors, check budgets."""
        ...

    def on_stop(self, last_message: str) -> StopAnswer:
        """The agent tries to end its turn: check the goal (and budgets) and allow or block."""
        ...


class Agent(Protocol):
    """A coding agent the campaign can drive, one session at a time."""

    name: str  # backend name as written in the trace: claude, openai, scripted

    def run_session(self, workspace: Path, opening: str, hooks: HookSet, limits: SessionLimits) -> SessionOutcome:
        """Work in ``workspace`` from ``opening`` until the stop is allowed or ``hooks`` halts the session."""
        ...
