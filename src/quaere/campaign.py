"""A campaign: a generalist agent, many sessions, questions at moments, a goal it cannot talk past.

``run_campaign`` creates the workspace from the task (or opens it), then runs sessions until the goal is
met or a budget (sessions, tool calls, wall time, cost, Stop-hook blocks) is spent. The evaluator is the
only judge: the agent runs ``quaere eval`` itself, and the Stop hook checks the goal on the signed store. The
first prompt carries the campaign-start question; the post-tool and Stop hooks ask the others.

Everything that happens goes to ``.quaere/trace.jsonl`` (append-only, fsynced); where the loop stands goes
to ``.quaere/campaign.json`` (rewritten atomically). Interrupted by Ctrl-C, a crash or a killed process,
``run_campaign(..., resume=True)`` closes the interrupted session with ``session_end: interrupted`` and
carries on: nothing written before is ever rewritten, so the trace of the first run is a prefix of the
trace after the resume.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from quaere.agents.base import Agent, EndReason, SessionLimits, SessionOutcome
from quaere.agents.config import CampaignConfig
from quaere.agents.display import CampaignView, Display, NullDisplay, TraceFollower, best_by_group
from quaere.agents.session import Counters, Limits, SessionHooks
from quaere.agents.state import CampaignState, CampaignStatus, StateError, load_state, save_state
from quaere.goal_render import render_goal
from quaere.hooks.handlers import HookDeps, MomentDetector, current_goal
from quaere.hooks.state import HookBudget, update_state
from quaere.serve.deploy import Deployment
from quaere.store import Store, StoreError
from quaere.store.pinning import check_workspace, register_workspace, task_reference
from quaere.task import Task, load_task
from quaere.trace import (
    AgentMessage,
    BudgetSpent,
    ErrorEvent,
    SessionEnd,
    SessionStart,
    SessionUnchecked,
    StopDecision,
    ToolCall,
    TraceWriter,
    TrustModeEvent,
    read_trace,
)
from quaere.workspace import Workspace, WorkspaceError, create_workspace, open_workspace

if TYPE_CHECKING:
    from quaere.methods.base import Method
    from quaere.questions.sources import QuestionSource

MAX_ERRORS_IN_A_ROW = 3  # sessions failing one after another (an unreachable API): stop, resumable


@dataclass(frozen=True)
class CampaignResult:
    """How a run of the campaign ended."""

    reason: str  # goal_met, a budget's name (sessions, tool_calls, wall_s, cost_usd, blocks), interrupted, error
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


class _Run:
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
                last_activity=_activity(last) if last is not None else "",
                status=self.counters.spent or self.state.status.value,
            )
        )

    def spent_between_sessions(self) -> str:
        """A budget that forbids another session (writing its ``budget`` event), else ""."""
        if self.counters.spent:
            return self.counters.spent
        budgets = self.config.budgets
        wall_limit = budgets.wall_min * 60 if budgets.wall_min is not None else None
        checks = (
            ("sessions", budgets.sessions, float(self.state.sessions_started)),
            ("tool_calls", budgets.tool_calls, float(self.counters.tool_calls)),
            ("wall_s", wall_limit, self.wall_s()),
            ("cost_usd", budgets.cost_usd, self.counters.cost_usd),
        )
        for name, limit, used in checks:
            if limit is not None and used >= limit:
                self.writer.write(BudgetSpent(session=self.session, budget=name, limit=float(limit), used=used))
                self.counters.spent = name
                return name
        return ""

    def run(self) -> CampaignResult:
        errors = 0
        while True:
            status, _ = current_goal(self.deps)
            if status.met:
                return self.finish("goal_met")
            spent = self.spent_between_sessions()
            if spent:
                return self.finish(spent)
            outcome = self.one_session(render_goal(status, time.time()))
            errors = errors + 1 if outcome.reason is EndReason.ERROR else 0
            if errors >= MAX_ERRORS_IN_A_ROW or (errors and not outcome.started):
                self.save()
                return self.result("error", outcome.detail)

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
            self.end_session("interrupted")
            raise
        self.counters.cost_usd += outcome.cost_usd or 0.0
        if outcome.reason is EndReason.ERROR:
            self.writer.write(
                ErrorEvent(session=self.session, where=f"agent:{self.agent.name}", message=outcome.detail)
            )
        if not self.stop_allowed():
            detail = f"{outcome.reason.value}{': ' + outcome.detail if outcome.detail else ''}"
            self.writer.write(SessionUnchecked(session=self.session, reason=detail))
        self.end_session(outcome.reason.value)
        return outcome

    def stop_allowed(self) -> bool:
        """Whether the Stop hook let a stop of the current session through (goal met or a budget spent)."""
        events = read_trace(self.ws.trace).events
        return any(isinstance(e, StopDecision) and e.session == self.session and e.decision == "allow" for e in events)

    def limits(self) -> SessionLimits:
        cost = self.config.budgets.cost_usd
        return SessionLimits(cost_usd=None if cost is None else max(cost - self.counters.cost_usd, 0.0))

    def end_session(self, reason: str) -> None:
        self.writer.write(SessionEnd(session=self.session, reason=reason))
        self.state.session_open = False
        self.changed()

    def finish(self, reason: str) -> CampaignResult:
        self.state.status = CampaignStatus.FINISHED
        self.state.finished_reason = reason
        self.changed()
        return self.result(reason)

    def result(self, reason: str, detail: str = "") -> CampaignResult:
        return CampaignResult(
            reason,
            self.state.sessions_started,
            self.counters.tool_calls,
            self.wall_s(),
            self.counters.cost_usd,
            self.ws.root,
            detail,
        )


def _activity(event: object) -> str:
    """One line on the latest event for the live view."""
    fields = ("text", "input", "reason", "budget", "moment", "candidate_hash", "agent")
    text = next((str(getattr(v, "value", v)) for f in fields if (v := getattr(event, f, None))), "")
    return f"{getattr(event, 'type', '?')}: {text.splitlines()[0] if text else ''}"


def prepare_workspace(
    config: CampaignConfig, task: Task, resume: bool, store: Store
) -> tuple[Workspace, CampaignState]:
    """Create the workspace (pinning the task and the block budget in ``store``) and a fresh state, or open
    both for a resume (closing an interrupted session)."""
    budget = HookBudget(max_blocks=config.budgets.max_blocks)
    if not resume:
        if (config.workspace / ".quaere" / "campaign.json").exists():
            raise StateError(f"{config.workspace}: a campaign already exists here; resume it with --resume")
        try:
            existing = (config.workspace / ".quaere" / "workspace.toml").exists()
            workspace = (
                open_workspace(config.workspace)
                if existing
                else create_workspace(config.workspace, task_reference(task), task.initial_kernel)
            )
        except WorkspaceError as exc:
            raise StateError(str(exc)) from None
        if workspace.root.resolve() != config.workspace.resolve():
            raise StateError(f"{config.workspace}: inside another workspace ({workspace.root})")
        _pin(store, workspace, task, budget)
        return workspace, CampaignState(config=config.persistable(), runs=1)
    workspace = open_workspace(config.workspace)
    _pin(store, workspace, task, budget)
    state = load_state(workspace.campaign_state)
    events = read_trace(workspace.trace).events
    state.tool_calls = sum(1 for e in events if isinstance(e, ToolCall) and e.session > 0)
    if state.session_open:
        last = max((e.session for e in events), default=state.sessions_started)
        TraceWriter(workspace.trace, secrets=config.secret_values()).write(
            SessionEnd(session=last, reason="interrupted")
        )
        state.session_open = False
    state.status = CampaignStatus.RUNNING
    state.finished_reason = ""
    state.wall_s_before = state.wall_s
    state.runs += 1
    state.config = config.persistable()
    return workspace, state


def _pin(store: Store, workspace: Workspace, task: Task, budget: HookBudget) -> None:
    """Register the workspace's task (refusing another one by name) and pin the campaign's block budget."""
    if workspace.task != task_reference(task):
        raise StateError(f"{workspace.config}: a workspace of task '{workspace.task}', not '{task_reference(task)}'")
    try:
        registration = register_workspace(store, workspace, task, budget)
        check_workspace(store, workspace, registration, (workspace.root,))
        if registration.budget != budget:
            store.update_registration(workspace.id, lambda r: r.model_copy(update={"budget": budget}))
    except StoreError as exc:
        raise StateError(str(exc)) from None


def hook_deps(
    config: CampaignConfig,
    workspace: Workspace,
    store: Store,
    source: QuestionSource | None,
    moments: MomentDetector | None,
) -> HookDeps:
    """The hook handlers' dependencies for a campaign: the signed store and the pinned task, the goal's
    confirmation (here or by the evaluator service), ``source`` behind the queue of ``quaere ask``, the
    detectors with the campaign's settings, and ``record_tool_events=False`` (the campaign traces tool
    calls itself). The block budget is the one pinned in the store."""
    from quaere.hooks.dialect import HookDialect
    from quaere.hooks.wiring import build_deps
    from quaere.questions.ask import load_task_spec
    from quaere.questions.bank import load_bank
    from quaere.questions.picking import Detectors, QueuedQuestions
    from quaere.questions.situation import context_of
    from quaere.questions.sources import BankSource
    from quaere.serve.access import confirmer_for

    chosen = source if source is not None else BankSource(load_bank(), config.seed)
    return build_deps(
        workspace,
        store,
        HookDialect.CLAUDE_CODE,
        confirmer=confirmer_for(store, workspace),
        questions=QueuedQuestions(workspace, chosen, context_of(load_task_spec(workspace)), config.moments),
        moments=moments if moments is not None else Detectors(config.moments),
        record_tool_events=False,
        secrets=config.secret_values(),
    )


def run_campaign(
    config: CampaignConfig,
    agent: Agent,
    source: QuestionSource | None = None,
    moments: MomentDetector | None = None,
    *,
    resume: bool = False,
    display: Display | None = None,
    clock: Callable[[], float] = time.monotonic,
    deployment: Deployment | None = None,
    announce: Callable[[str], None] = lambda line: None,
    method: Method | None = None,
) -> CampaignResult:
    """Run (or resume) the campaign described by ``config`` with ``agent``.

    ``source`` is a question source of :mod:`quaere.questions.sources` (``choose(moment, context, asked,
    evidence)``; None: the bank's policy under ``config.seed``); a question a person queued with
    ``quaere ask`` always goes first. ``moments`` detects the moments (None: the five detectors with
    ``config.moments``). Returns when the goal is met, a budget is spent, or sessions keep failing (then
    resumable). Ctrl-C closes the session as interrupted, saves the state and re-raises.

    ``deployment`` says where the signed store is and who runs what (None: same-user mode with this
    user's default store; ``quaere run`` passes the strongest the machine allows); ``announce`` receives
    the trust-mode line said at the start of every run. ``method`` is what the agent is given besides the
    evaluator and the goal (:mod:`quaere.methods`; None: the arm ``config.method`` names, which must then be
    questions or goal-only). Raises :class:`~quaere.methods.base.MethodError` when the trace already
    records another method.
    """
    from quaere.methods.arms import plain_method
    from quaere.store import default_store_root

    deployment = deployment or Deployment(Store(default_store_root(os.environ)))
    store = deployment.store
    task = load_task(config.task)
    arm = method if method is not None else plain_method(config.method)
    workspace, state = prepare_workspace(config, task, resume, store)
    save_state(workspace.campaign_state, state)
    deployment.adopt(workspace)
    deps = arm.hooks(hook_deps(config, workspace, store, source, moments))
    announce(deployment.line())
    writer = TraceWriter(workspace.trace, secrets=config.secret_values())
    writer.write(TrustModeEvent(mode=deployment.mode.value, detail=deployment.line()))
    arm.start(workspace, writer)
    view = display or NullDisplay()
    try:
        return _Run(config, task, workspace, state, agent, deps, view, clock, arm).run()
    finally:
        view.close()
