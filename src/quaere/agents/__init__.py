"""Coding agents a campaign can drive, behind one small protocol (:mod:`quaere.agents.base`).

Backends: :mod:`.claude` (Claude Code through the Claude Agent SDK), :mod:`.openai_loop` (a bash-tool loop
over any OpenAI-compatible endpoint), :mod:`.scripted` (replays canned actions). The campaign's side of a
session is :mod:`.session`; its settings :mod:`.config`, its state :mod:`.state`, its live view
:mod:`.display`. Backends are imported by name, never here: the SDK and the ``openai`` client are heavy.
"""

from quaere.agents.base import Agent, EndReason, HookSet, SessionLimits, SessionOutcome, StopAnswer, ToolAnswer

__all__ = ["Agent", "EndReason", "HookSet", "SessionLimits", "SessionOutcome", "StopAnswer", "ToolAnswer"]
