"""The agent hooks, in-process: Stop (the goal), PostToolUse (moments after an evaluation), UserPromptSubmit.

Each handler takes the hook's JSON payload (Claude Code's shape; Codex and OpenHands send the same keys)
and its dependencies, and returns a :class:`HookAnswer`: the JSON to print, the exit code, a note for
stderr. ``quaere hook ...`` is a thin shell around them; an SDK-driven campaign calls them directly.

Stop: when the goal is unmet or stale the agent is sent back with every failing scenario, its numbers and
one question for the "claimed limit or completion" moment; when met, the stop goes through. Every attempt
and answer goes to the trace. A spent budget (blocks, sessions, wall time) lets the stop through with a
``BudgetSpent`` event. Bad input never crashes silently and never traps: Stop blocks with an explanation,
counted against the block budget (:func:`broken_answer`).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from quaere.goal import (
    GoalState, GoalStatus, Retimer, check_goal, check_goal_with_retime, is_timing_only, render_goal,
)
from quaere.hook_install import Agent
from quaere.hook_state import HookBudget, HookState, HookStateError, read_state, update_state
from quaere.records import Evaluation, Moment, QuestionKind
from quaere.task.spec import TaskSpec
from quaere.trace import (
    AgentMessage, BudgetSpent, ErrorEvent, EvaluationDone, Event, MomentDetected, QuestionAsked, StopAttempt, StopDecision,
    ToolCall, ToolResult, TraceEvent, TraceWriter, cut, read_trace,
)
from quaere.workspace import Workspace, content_hash

POST_TOOL_MOMENTS = (Moment.SUSPICIOUS_GAIN, Moment.PLATEAU, Moment.EXPLAINED_FAILURE)
ERROR_BLOCK_LIMIT = 3  # blocks for a broken set-up when no workspace holds a budget


@dataclass(frozen=True)
class HookAnswer:
    """What the hook command prints (JSON on stdout, a note on stderr) and its exit code."""

    output: dict[str, Any] | None
    exit_code: int = 0
    stderr: str = ""
    decision: Literal["block", "allow", "none"] = "none"


@dataclass(frozen=True)
class PickedQuestion:
    text: str
    source: Literal["bank", "human"]
    entry_id: str | None = None
    kind: QuestionKind | None = None


class QuestionPicker(Protocol):
    """One question for a moment: a person's queued question first, else the bank's choice."""

    def pick(self, moment: Moment, evidence: str) -> PickedQuestion | None: ...


class MomentDetector(Protocol):
    """The moments that hold now, given the trace so far: (moment, evidence) pairs."""

    def detect(self, events: Sequence[TraceEvent], now: float) -> list[tuple[Moment, str]]: ...


EvaluationReader = Callable[[], tuple[Sequence[Evaluation], Sequence[str]]]  # (evaluations, problems)
EvaluationSummary = Callable[[Evaluation], Event]  # the trace event of one evaluation


@dataclass(frozen=True)
class HookDeps:
    """Everything a handler needs; built by ``quaere hook`` or by a campaign."""

    workspace: Workspace
    spec: TaskSpec
    questions: QuestionPicker
    moments: MomentDetector
    read_evaluations: EvaluationReader
    summarize: EvaluationSummary | None = None  # None: the evaluator writes its own trace events
    clock: Callable[[], float] = time.time
    agent: Agent = Agent.CLAUDE_CODE
    budget: HookBudget | None = None  # None: the one stored in .quaere/hooks.json
    retimer: Retimer | None = None
    expected_correctness: tuple[str, ...] | None = None
    expected_benchmarks: tuple[str, ...] | None = None
    record_tool_events: bool = True  # False when the campaign already traces tool calls itself
    secrets: tuple[str, ...] = field(default=())

    @property
    def trace(self) -> TraceWriter:
        return TraceWriter(self.workspace.trace, secrets=self.secrets)


# -- answers in each agent's dialect --------------------------------------------------------------------

def _block(agent: Agent, reason: str, stderr: str = "") -> HookAnswer:
    if agent is Agent.OPENHANDS:  # OpenHands blocks a stop on exit code 2 (and reads "deny")
        return HookAnswer({"decision": "deny", "reason": reason}, 2, stderr or reason, "block")
    return HookAnswer({"decision": "block", "reason": reason}, 0, stderr, "block")


def _allow(message: str, stderr: str = "") -> HookAnswer:
    return HookAnswer({"systemMessage": message}, 0, stderr, "allow")


def _context(agent: Agent, event: str, text: str) -> HookAnswer:
    output: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    if agent is Agent.OPENHANDS:
        output["additionalContext"] = text
    return HookAnswer(output)


# -- Stop -------------------------------------------------------------------------------------------------

def _session_index(state: HookState, session_id: str) -> int:
    if session_id and session_id not in state.sessions:
        state.sessions.append(session_id)
    return state.sessions.index(session_id) + 1 if session_id in state.sessions else 0


def current_goal(deps: HookDeps) -> tuple[GoalStatus, list[str]]:
    """The goal status of the current candidate file, and the ledger's reading problems."""
    evaluations, problems = deps.read_evaluations()
    candidate = content_hash(deps.workspace.candidate)
    kwargs = dict(expected_correctness=deps.expected_correctness, expected_benchmarks=deps.expected_benchmarks)
    if deps.retimer is not None:
        status = check_goal_with_retime(deps.spec, evaluations, candidate, deps.retimer, **kwargs)
    else:
        status = check_goal(deps.spec, evaluations, candidate, **kwargs)
    return status, list(problems)


def _ask(deps: HookDeps, moment: Moment, evidence: str, session: int) -> PickedQuestion | None:
    picked = deps.questions.pick(moment, evidence)
    if picked is not None:
        deps.trace.write(QuestionAsked(
            session=session, moment=moment, source=picked.source, entry_id=picked.entry_id,
            text=picked.text, kind=picked.kind,
        ))
    return picked


def handle_stop(payload: dict[str, Any], deps: HookDeps) -> HookAnswer:
    """Let the agent stop only when the goal is met (or a budget is spent); else block with a question."""
    if not isinstance(payload, dict):
        return broken_answer("Stop", "the hook input is not a JSON object", deps.agent, deps.workspace.state)
    now = deps.clock()
    session_id = str(payload.get("session_id") or "")

    def register(state: HookState) -> None:
        state.started_at = state.started_at if state.started_at is not None else now
        if deps.budget is not None:
            state.budget = deps.budget
        _session_index(state, session_id)

    state = update_state(deps.workspace.state, register)
    session = _session_index(state, session_id)
    last = payload.get("last_assistant_message")
    deps.trace.write(StopAttempt(session=session, last_message=last if isinstance(last, str) else ""))
    status, problems = current_goal(deps)
    note = "\n".join(f"quaere: ledger: {p}" for p in problems)
    if status.met:
        reason = render_goal(status, now)
        deps.trace.write(StopDecision(session=session, decision="allow", reason=reason, goal_status="met"))
        return _allow(reason, note)
    spent = state.budget_spent(now)
    if spent is not None:
        budget, limit, used = spent
        deps.trace.write(BudgetSpent(session=session, budget=budget, limit=limit, used=used))
        reason = f"quaere: {budget} budget spent ({used:g} of {limit:g}); stopping with the goal {status.state.value}."
        deps.trace.write(StopDecision(session=session, decision="allow", reason=reason, goal_status="budget_spent"))
        return _allow(reason + "\n" + render_goal(status, now), note)
    picked = _ask(deps, Moment.CLAIMED_LIMIT, render_goal(status, now), session)
    reason = render_goal(status, now)
    if problems:
        reason += "\n" + "\n".join(f"ledger problem: {p}" for p in problems)
    if picked is not None:
        reason += f"\n\nQuestion: {picked.text}"
    update_state(deps.workspace.state, lambda s: setattr(s, "blocks", s.blocks + 1))
    deps.trace.write(StopDecision(session=session, decision="block", reason=reason, goal_status=status.state.value))
    return _block(deps.agent, reason, note)


def broken_answer(event: str, message: str, agent: Agent, state_dir: Path | None, session_id: str = "") -> HookAnswer:
    """The safe answer when the hook cannot judge (bad input, no workspace, unreadable state).

    Stop: block with the explanation, counted against the block budget (the workspace's, else a small one
    kept in the temp folder per session) so a broken set-up never traps the agent. Other events: no
    answer. Always a clear message on stderr.
    """
    text = f"quaere hook {event}: {message}"
    if event != "Stop":
        return HookAnswer(None, 0, text)
    used, limit = _count_error_block(state_dir, session_id)
    if used > limit:
        return _allow(f"{text}. The error budget ({limit} blocks) is spent: letting the agent stop.", text)
    reason = f"{text}. The goal could not be checked, so stopping is not accepted yet (block {used} of {limit}); fix the set-up (run `quaere goal` to see the problem)."
    return _block(agent, reason, text)


def _count_error_block(state_dir: Path | None, session_id: str) -> tuple[int, int]:
    if state_dir is not None and state_dir.is_dir():
        try:
            state = update_state(state_dir, lambda s: setattr(s, "blocks", s.blocks + 1))
            return state.blocks, state.budget.max_blocks
        except (HookStateError, OSError):
            pass  # fall through to the per-session counter: the state itself is what is broken
    key = "".join(c for c in session_id if c.isalnum() or c in "-_")[:64] or "no-session"
    path = Path(tempfile.gettempdir()) / f"quaere-hook-errors-{key}.json"
    try:
        used = int(json.loads(path.read_text()).get("blocks", 0)) + 1
    except (OSError, ValueError, AttributeError):
        used = 1
    try:
        path.write_text(json.dumps({"blocks": used}))
    except OSError:
        used = ERROR_BLOCK_LIMIT + 1  # cannot count: never risk trapping the agent
    return used, ERROR_BLOCK_LIMIT


# -- PostToolUse ----------------------------------------------------------------------------------------

def _ran_eval(payload: dict[str, Any]) -> bool:
    tool_input = payload.get("tool_input")
    command = tool_input.get("command", "") if isinstance(tool_input, dict) else ""
    return isinstance(command, str) and "quaere eval" in command


def _record_tool(payload: dict[str, Any], deps: HookDeps, session: int) -> None:
    call_id = str(payload.get("tool_use_id") or "")
    text_in = json.dumps(payload.get("tool_input"), default=str)
    deps.trace.write(ToolCall(session=session, call_id=call_id, tool=str(payload.get("tool_name") or "?"),
                              input=cut(text_in)[0]))
    response = payload.get("tool_response")
    full = response if isinstance(response, str) else json.dumps(response, default=str)
    output, digest = cut(full)
    deps.trace.write(ToolResult(session=session, call_id=call_id, output=output, output_sha256=digest))


def _summarize_new(evaluations: Sequence[Evaluation], deps: HookDeps, session: int) -> None:
    """Trace a summary of each new full evaluation the evaluator did not trace itself."""
    traced = [e for e in read_trace(deps.workspace.trace).events if isinstance(e, EvaluationDone)]
    for evaluation in evaluations:
        if is_timing_only(evaluation):
            continue  # a re-timing is not a new version: detectors would read it as a failing one
        if any(e.candidate_hash == evaluation.candidate_hash and e.ts >= evaluation.created_at for e in traced):
            continue
        deps.trace.write(deps.summarize(evaluation).model_copy(update={"session": session}))


def handle_post_tool(payload: dict[str, Any], deps: HookDeps) -> HookAnswer:
    """After an evaluation, ask the question of a moment that holds (suspicious gain, plateau, explained failure)."""
    if not isinstance(payload, dict):
        return broken_answer("PostToolUse", "the hook input is not a JSON object", deps.agent, None)
    state = read_state(deps.workspace.state)
    session = _session_index(state, str(payload.get("session_id") or ""))
    if deps.record_tool_events:
        _record_tool(payload, deps, session)
    evaluations, problems = deps.read_evaluations()
    note = "\n".join(f"quaere: ledger: {p}" for p in problems)
    seen = state.ledger_lines_seen
    if len(evaluations) <= seen and not _ran_eval(payload):
        return HookAnswer(None, 0, note)
    if deps.summarize is not None:
        _summarize_new(evaluations[seen:], deps, session)
    now = deps.clock()
    found = deps.moments.detect(read_trace(deps.workspace.trace).events, now)
    asked_key = ""
    picked = None
    for moment, evidence in found:
        key = f"{moment.value}@{len(evaluations)}"
        if moment not in POST_TOOL_MOMENTS or key in state.asked_moments:
            continue
        deps.trace.write(MomentDetected(session=session, moment=moment, evidence=evidence))
        picked = _ask(deps, moment, evidence, session)
        asked_key = key
        break

    def remember(s: HookState) -> None:
        s.ledger_lines_seen = max(s.ledger_lines_seen, len(evaluations))
        if asked_key:
            s.asked_moments.append(asked_key)

    update_state(deps.workspace.state, remember)
    if picked is None:
        return HookAnswer(None, 0, note)
    answer = _context(deps.agent, "PostToolUse", f"Question: {picked.text}")
    return HookAnswer(answer.output, 0, note, "none")


# -- UserPromptSubmit -------------------------------------------------------------------------------------

def handle_prompt(payload: dict[str, Any], deps: HookDeps) -> HookAnswer:
    """The campaign-start question, once per campaign, as additional context of the first prompt."""
    if not isinstance(payload, dict):
        return broken_answer("UserPromptSubmit", "the hook input is not a JSON object", deps.agent, None)
    now = deps.clock()
    first: list[bool] = []

    def claim(state: HookState) -> None:
        state.started_at = state.started_at if state.started_at is not None else now
        _session_index(state, str(payload.get("session_id") or ""))
        first.append(not state.campaign_start_asked)
        state.campaign_start_asked = True

    state = update_state(deps.workspace.state, claim)
    session = _session_index(state, str(payload.get("session_id") or ""))
    prompt = payload.get("prompt")
    if deps.record_tool_events and isinstance(prompt, str) and prompt:
        deps.trace.write(AgentMessage(session=session, role="user", text=cut(prompt)[0]))
    if not first[0]:
        return HookAnswer(None)
    deps.trace.write(MomentDetected(session=session, moment=Moment.CAMPAIGN_START, evidence="first prompt of the campaign"))
    picked = _ask(deps, Moment.CAMPAIGN_START, "campaign start", session)
    if picked is None:
        return HookAnswer(None)
    return _context(deps.agent, "UserPromptSubmit", f"Question: {picked.text}")


def record_error(deps: HookDeps, where: str, message: str) -> None:
    """Note a hook failure in the trace (best effort: the trace may be what failed)."""
    try:
        deps.trace.write(ErrorEvent(where=where, message=message))
    except OSError:
        pass


__all__ = [
    "GoalState", "HookAnswer", "HookDeps", "MomentDetector", "PickedQuestion", "QuestionPicker",
    "broken_answer", "current_goal", "handle_post_tool", "handle_prompt", "handle_stop", "record_error",
]
