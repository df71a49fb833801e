"""The campaign's side of one session: a :class:`~quaere.agents.base.HookSet` over quaere's hook logic.

Every backend calls the same four methods; they call the in-process hook handlers of :mod:`quaere.hooks`
(the logic behind ``quaere hook stop|post-tool|prompt``) with a payload in Claude Code's shape, so a
campaign and a user's own agent with installed hooks are judged by the same code. Around them this
module adds what only a campaign has: the session number on every event, the count of tool calls, the
tool-call and wall-time budgets (a spent one halts the session and leaves a ``budget`` event), and a copy
of every candidate version the evaluator saw (``.quaere/candidates/<sha256>``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quaere.agents.base import CampaignEnd, StopAnswer, ToolAnswer
from quaere.hooks.dialect import WireEvent
from quaere.hooks.handlers import HookDeps, broken_answer, handle_post_tool, handle_prompt, handle_stop
from quaere.records import StopStatus
from quaere.trace import BudgetSpent, ErrorEvent, Event, TraceWriter
from quaere.workspace import Workspace, content_hash


@dataclass
class Counters:
    """Campaign-wide counts the budgets are checked against (kept in the campaign state)."""

    tool_calls: int = 0
    cost_usd: float = 0.0
    spent: CampaignEnd | None = None  # the budget that ran out (None while none has)


@dataclass(frozen=True)
class Limits:
    tool_calls: int | None
    wall_s: float | None


@dataclass
class SessionHooks:
    """One session's hook set. ``on_change`` is called after every event (live view, state save)."""

    session: int
    session_id: str
    deps: HookDeps
    writer: TraceWriter
    counters: Counters
    limits: Limits
    wall_s: Callable[[], float]
    on_change: Callable[[], None] = lambda: None
    blocks: int = field(default=0)

    # -- HookSet ---------------------------------------------------------------------------------------
    def record(self, event: Event) -> None:
        self.writer.write(event.model_copy(update={"session": self.session}))
        self.on_change()

    def on_prompt(self, prompt: str) -> str:
        answer = handle_prompt(self._payload(WireEvent.USER_PROMPT_SUBMIT.value, prompt=prompt), self.deps)
        return answer.text

    def after_tool(self, tool: str, tool_input: dict[str, Any], output: str) -> ToolAnswer:
        self.counters.tool_calls += 1
        keep_evaluated_versions(self.deps.workspace, self.deps.read_evaluations()[0])
        payload = self._payload(
            WireEvent.POST_TOOL_USE.value, tool_name=tool, tool_input=tool_input, tool_response=output
        )
        try:
            context = handle_post_tool(payload, self.deps).text
        except Exception as exc:  # noqa: BLE001 - a broken ledger or bank must not end the session: no question
            self._error("hook:post_tool", exc)
            context = ""
        spent = self.check_budgets()
        self.on_change()
        if spent:
            return ToolAnswer(context=context, halt=True, halt_reason=f"{spent.value} budget spent")
        return ToolAnswer(context=context)

    def on_stop(self, last_message: str) -> StopAnswer:
        payload = self._payload(
            WireEvent.STOP.value, stop_hook_active=self.blocks > 0, last_assistant_message=last_message
        )
        try:
            answer = handle_stop(payload, self.deps)
        except Exception as exc:  # noqa: BLE001 - the hooks' safe answer: block, counted against a small budget
            self._error("hook:stop", exc)
            answer = broken_answer(
                WireEvent.STOP, str(exc), self.deps.agent, self.deps.workspace.state, self.session_id
            )
        self.on_change()
        if answer.decision == "block":
            self.blocks += 1
            return StopAnswer(allow=False, reason=answer.text)
        if answer.goal_status is StopStatus.BUDGET_SPENT and not self.counters.spent:
            self.counters.spent = CampaignEnd.BLOCKS
        return StopAnswer(allow=True, reason=answer.text, goal_met=answer.goal_status is StopStatus.MET)

    # -- budgets -----------------------------------------------------------------------------------------
    def check_budgets(self) -> CampaignEnd | None:
        """A spent tool-call or wall-time budget (writing its ``budget`` event once), else None."""
        if self.counters.spent:
            return self.counters.spent
        checks = (
            (CampaignEnd.TOOL_CALLS, self.limits.tool_calls, float(self.counters.tool_calls)),
            (CampaignEnd.WALL_S, self.limits.wall_s, self.wall_s()),
        )
        for budget, limit, used in checks:
            if limit is not None and used >= limit:
                self.counters.spent = budget
                self.writer.write(BudgetSpent(session=self.session, budget=budget.value, limit=float(limit), used=used))
                return budget
        return None

    def _error(self, where: str, exc: Exception) -> None:
        self.writer.write(ErrorEvent(session=self.session, where=where, message=f"{type(exc).__name__}: {exc}"))

    def _payload(self, event: str, **fields: Any) -> dict[str, Any]:
        workspace = self.deps.workspace
        return {
            "session_id": self.session_id,
            "transcript_path": "",
            "cwd": str(workspace.root),
            "hook_event_name": event,
            **fields,
        }


def keep_evaluated_versions(workspace: Workspace, evaluations: Any) -> list[str]:
    """Copy every evaluated candidate still on disk with its evaluated content into ``candidates/``.

    Returns the hashes newly kept. A version edited again before this runs is gone; its hash stays in
    the ledger, and the trace's tool calls hold the edits.
    """
    kept: list[str] = []
    stored = {p.stem for p in workspace.candidates_dir.glob("*")} if workspace.candidates_dir.exists() else set()
    for evaluation in evaluations:
        if evaluation.candidate_hash in stored:
            continue
        path = Path(evaluation.candidate_path)
        path = path if path.is_absolute() else workspace.root / path
        if path.is_file() and content_hash(path) == evaluation.candidate_hash:
            workspace.keep_version(path)
            stored.add(evaluation.candidate_hash)
            kept.append(evaluation.candidate_hash)
    return kept
