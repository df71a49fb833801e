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
from typing import TYPE_CHECKING

from quaere.agents.base import Agent, EndReason
from quaere.agents.config import CampaignConfig
from quaere.agents.display import Display, NullDisplay
from quaere.agents.state import CampaignState, CampaignStatus, StateError, load_state, save_state
from quaere.campaign_loop import MAX_ERRORS_IN_A_ROW, CampaignEnd, CampaignResult, CampaignRun, opening_message
from quaere.hooks.handlers import HookDeps, MomentDetector
from quaere.hooks.state import HookBudget
from quaere.serve.deploy import Deployment
from quaere.store import Store, StoreError
from quaere.store.pinning import check_workspace, register_workspace, task_reference
from quaere.task import Task, load_task
from quaere.trace import SessionEnd, ToolCall, TraceWriter, TrustModeEvent, read_trace
from quaere.workspace import Workspace, WorkspaceError, create_workspace, open_workspace

if TYPE_CHECKING:
    from quaere.methods.base import Method
    from quaere.questions.sources import QuestionSource

__all__ = ["MAX_ERRORS_IN_A_ROW", "CampaignEnd", "CampaignResult", "hook_deps", "opening_message", "prepare_workspace",
           "run_campaign"]


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
            SessionEnd(session=last, reason=EndReason.INTERRUPTED)
        )
        state.session_open = False
    state.status = CampaignStatus.RUNNING
    state.finished_reason = None
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
        return CampaignRun(config, task, workspace, state, agent, deps, view, clock, arm).run()
    finally:
        view.close()
