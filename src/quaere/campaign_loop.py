"""The loop of one campaign run: sessions until the goal is met or a budget is spent, the counters and
the state between sessions, and what the agent reads first in each session. :func:`quaere.campaign.
run_campaign` prepares the workspace and the hooks and hands them to :class:`CampaignRun`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from quaere.agents.base import Agent, CampaignEnd, EndReason, SessionLimits, SessionOutcome
from quaere.agents.config import CampaignConfig
from quaere.agents.display import CampaignView, Display, TraceFollower, best_by_group
from quaere.agents.session import Counters, Limits, SessionHooks
from quaere.agents.state import CampaignState, CampaignStatus, save_state
from quaere.goal_render import render_goal
from quaere.hooks.handlers import HookDeps, current_goal
from quaere.hooks.state import update_state
from quaere.task import Task
from quaere.trace import (
    AgentMessage,
    BudgetSpent,
    ErrorEvent,
    SessionEnd,
    SessionStart,
    SessionUnchecked,
    StopDecision,
    TraceWriter,
    read_trace,
)
from quaere.workspace import Workspace

if TYPE_CHECKING:
    from quaere.methods.base import Method

MAX_ERRORS_IN_A_ROW = 3  # sessions failing one after another (an unreachable API): stop, resumable


@dataclass(frozen=True)
class CampaignResult:
    """How a run of the campaign ended."""

    reason: CampaignEnd
    sessions: int
    tool_calls: int
    wall_s: float
    cost_usd: float
    workspace: Path
    detail: str = ""  # when reason is error: why the last session failed (its first line for the terminal)


def opening_message(task: Task, workspace: Workspace, session: int, goal_text: str) -> str:
    """What the agent reads first in a session: the task, the judge, the goal, and where it stands."""
    targets = "; ".join(
        f"{t.ratio:g}x faster than '{t.baseline}' on every benchmark scenario matching '{t.scenarios}'"
        for t in task.spec.goal.targets
    )
    head = (
        f"Task '{task.spec.name}': {task.spec.description.strip()}\n"
        f"The candidate kernel is {workspace.candidate_name} in this folder; make it faster while keeping it "
        f"correct. Run `quaere eval` here to build, check and time it: the evaluator is the only judge. "
        f"Goal: every correctness scenario passes and the candidate is {targets}. "
        f"You work alone; when you believe the goal is met, stop, and quaere will check it."
    )
    if session <= 1:
        return head
    return f"{head}\n\nThis is session {session} of the campaign. Where things stand:\n{goal_text}"


class CampaignRun:
    """One run (first start or a resume) of a campaign; holds the counters between sessions."""

    def __init__(
        self,
        config: CampaignConfig,
        task: Task,
        workspace: Workspace,
        state: CampaignState,
        agent: Agent,
        deps: HookDeps,
        display: Display,
        clock: Callable[[], float],
        method: Method,
    ) -> None:
        self.config, self.task, self.ws, self.state, self.agent = config, task, workspace, state, agent
        self.deps, self.display, self.clock, self.method = deps, display, clock, method
        self.writer = TraceWriter(workspace.trace, secrets=config.secret_values())
        self.started = clock()
        self.counters = Counters(tool_calls=state.tool_calls, cost_usd=state.cost_usd)
        self.session = state.sessions_started
        self.follower = TraceFollower(workspace.trace)

    def wall_s(self) -> float:
        return self.state.wall_s_before + (self.clock() - self.started)

    def save(self) -> None:
        self.state.tool_calls = self.counters.tool_calls
        self.state.cost_usd = self.counters.cost_usd
        self.state.wall_s = self.wall_s()
        save_state(self.ws.campaign_state, self.state)

    def changed(self) -> None:
        """After every event: save where the loop stands, refresh the live view."""
        self.save()
        self.follower.poll()
        budgets = self.config.budgets
        last = self.follower.last_event
        self.display.update(
            CampaignView(
                task=self.task.spec.name,
                agent=self.agent.name,
                session=self.session,
                sessions_limit=budgets.sessions,
                tool_calls=self.counters.tool_calls,
                tool_calls_limit=budgets.tool_calls,
                wall_s=self.wall_s(),
                cost_usd=self.counters.cost_usd,
                evaluations=len(self.follower.evaluations),
                best_by_group=best_by_group(self.follower.evaluations),
                last_question=self.follower.last_question,
                last_activity=activity_line(last) if last is not None else "",
                status=self.counters.spent.value if self.counters.spent else self.state.status.value,
            )
        )

    def spent_between_sessions(self) -> CampaignEnd | None:
        """A budget that forbids another session (writing its ``budget`` event), else None."""
        if self.counters.spent:
            return self.counters.spent
        budgets = self.config.budgets
        wall_limit = budgets.wall_min * 60 if budgets.wall_min is not None else None
        checks = (
            (CampaignEnd.SESSIONS, budgets.sessions, float(self.state.sessions_started)),
            (CampaignEnd.TOOL_CALLS, budgets.tool_calls, float(self.counters.tool_calls)),
            (CampaignEnd.WALL_S, wall_limit, self.wall_s()),
            (CampaignEnd.COST_USD, budgets.cost_usd, self.counters.cost_usd),
        )
        for budget, limit, used in checks:
            if limit is not None and used >= limit:
                self.writer.write(BudgetSpent(session=self.session, budget=budget.value, limit=float(limit), used=used))
                self.counters.spent = budget
                return budget
        return None

    def run(self) -> CampaignResult:
        errors = 0
        while True:
            status, _ = current_goal(self.deps)
            if status.met:
                return self.finish(CampaignEnd.GOAL_MET)
            spent = self.spent_between_sessions()
            if spent:
                return self.finish(spent)
            outcome = self.one_session(render_goal(status, time.time()))
            errors = errors + 1 if outcome.reason is EndReason.ERROR else 0
            if errors >= MAX_ERRORS_IN_A_ROW or (errors and not outcome.started):
                self.save()
                return self.result(CampaignEnd.ERROR, outcome.detail)

    def one_session(self, goal_text: str) -> SessionOutcome:
        session_id = f"quaere-{self.state.campaign_id}-{self.state.sessions_started + 1}"
        hook_state = update_state(
            self.deps.hook_state, lambda s: s.sessions.append(session_id) if session_id not in s.sessions else None
        )
        self.session = hook_state.sessions.index(session_id) + 1
        self.state.sessions_started += 1
        self.state.session_open = True
        self.writer.write(SessionStart(session=self.session, agent=self.agent.name))
        opening = opening_message(self.task, self.ws, self.state.sessions_started, goal_text)
        briefing = self.method.briefing(self.ws, self.session)
        opening = f"{opening}\n\n{briefing}" if briefing else opening
        self.writer.write(AgentMessage(session=self.session, role="user", text=opening))
        self.changed()
        session_hooks = SessionHooks(
            session=self.session,
            session_id=session_id,
            deps=self.deps,
            writer=self.writer,
            counters=self.counters,
            limits=Limits(
                self.config.budgets.tool_calls,
                self.config.budgets.wall_min * 60 if self.config.budgets.wall_min else None,
            ),
            wall_s=self.wall_s,
            on_change=self.changed,
        )
        hooks = self.method.session(session_hooks, self.session)
        try:
            outcome = self.agent.run_session(self.ws.root, opening, hooks, self.limits())
        except KeyboardInterrupt:
            self.end_session(EndReason.INTERRUPTED)
            raise
        self.counters.cost_usd += outcome.cost_usd or 0.0
        if outcome.reason is EndReason.ERROR:
            self.writer.write(
                ErrorEvent(session=self.session, where=f"agent:{self.agent.name}", message=outcome.detail)
            )
        if not self.stop_allowed():
            detail = f"{outcome.reason.value}{': ' + outcome.detail if outcome.detail else ''}"
            self.writer.write(SessionUnchecked(session=self.session, reason=detail))
        self.end_session(outcome.reason)
        return outcome

    def stop_allowed(self) -> bool:
        """Whether the Stop hook let a stop of the current session through (goal met or a budget spent)."""
        events = read_trace(self.ws.trace).events
        return any(isinstance(e, StopDecision) and e.session == self.session and e.decision == "allow" for e in events)

    def limits(self) -> SessionLimits:
        cost = self.config.budgets.cost_usd
        return SessionLimits(cost_usd=None if cost is None else max(cost - self.counters.cost_usd, 0.0))

    def end_session(self, reason: EndReason) -> None:
        self.writer.write(SessionEnd(session=self.session, reason=reason))
        self.state.session_open = False
        self.changed()

    def finish(self, reason: CampaignEnd) -> CampaignResult:
        self.state.status = CampaignStatus.FINISHED
        self.state.finished_reason = reason
        self.changed()
        return self.result(reason)

    def result(self, reason: CampaignEnd, detail: str = "") -> CampaignResult:
        return CampaignResult(
            reason,
            self.state.sessions_started,
            self.counters.tool_calls,
            self.wall_s(),
            self.counters.cost_usd,
            self.ws.root,
            detail,
        )


def activity_line(event: object) -> str:
    """One line on the latest event for the live view."""
    fields = ("text", "input", "reason", "budget", "moment", "candidate_hash", "agent")
    text = next((str(getattr(v, "value", v)) for f in fields if (v := getattr(event, f, None))), "")
    return f"{getattr(event, 'type', '?')}: {text.splitlines()[0] if text else ''}"
