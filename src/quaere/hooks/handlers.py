"""The agent hooks, in-process: Stop (the goal), PostToolUse (moments after an evaluation), UserPromptSubmit.

Each handler takes the hook's JSON payload (Claude Code's shape; Codex and OpenHands send the same keys)
and its dependencies, and returns a :class:`HookAnswer`: the JSON to print, the exit code, a note for
stderr. ``quaere hook ...`` is a thin shell around them; an SDK-driven campaign calls them directly.

Stop: when the goal is unmet or stale the agent is sent back with every failing scenario, its numbers and
one question for the moment the situation shows: a failure explained away while correctness fails (its
final message dismissing the failure or not), else a claimed limit or completion; when met, the stop goes
through. Every attempt and answer goes to the trace. A spent budget (blocks, sessions, wall time) lets
the stop through with a ``BudgetSpent`` event. Bad input never crashes silently and never traps: Stop
blocks with an explanation, counted against the block budget (:func:`broken_answer`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from quaere.goal import GoalState, GoalStatus, is_timing_only
from quaere.goal_render import render_goal
from quaere.goal_source import GoalJudge
from quaere.hooks.answers import (
    HookAnswer,
    allow_answer,
    block_answer,
    broken_answer,
    context_answer,
    stop_decision,
)
from quaere.hooks.dialect import HookDialect, WireEvent, tool_failed
from quaere.hooks.state import HookBudget, HookState, StateFile, read_state, update_state
from quaere.hooks.transcript import new_assistant_texts
from quaere.questions.phrases import read_words
from quaere.questions.sources import ChosenQuestion, NoQuestion
from quaere.records import Evaluation, Moment, StopStatus
from quaere.task.spec import TaskSpec
from quaere.trace import (
    AgentMessage,
    BudgetSpent,
    EvaluationDone,
    Event,
    MomentDetected,
    StopAttempt,
    ToolCall,
    ToolResult,
    TraceEvent,
    TraceWriter,
    cut,
    read_trace,
)
from quaere.workspace import Workspace, content_hash

WORD_MOMENTS = (Moment.EXPLAINED_FAILURE, Moment.CLAIMED_LIMIT)  # shown by the model's words, after any tool
POST_TOOL_MOMENTS = (Moment.SUSPICIOUS_GAIN, Moment.PLATEAU, *WORD_MOMENTS)  # after an evaluation


class QuestionPicker(Protocol):
    """One question for a moment: a person's queued question first, else the bank's choice on the evidence;
    :class:`NoQuestion` when nothing that fits is left (never a question that does not fit)."""

    def pick(self, moment: Moment, evidence: str) -> ChosenQuestion | NoQuestion: ...


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
    read_evaluations: EvaluationReader  # every verified store entry's evaluation, full and partial
    goal: GoalJudge  # the goal on the signed store, with its confirmation
    hook_state: StateFile  # the Stop hook's counters: in the store, signed (see build_deps)
    summarize: EvaluationSummary | None = None  # None: the evaluator writes its own trace events
    clock: Callable[[], float] = time.time
    agent: HookDialect = HookDialect.CLAUDE_CODE
    budget: HookBudget | None = None  # None: the one in the hook state (build_deps passes the pinned one)
    record_tool_events: bool = True  # False when the campaign already traces tool calls itself
    secrets: tuple[str, ...] = field(default=())

    @property
    def trace(self) -> TraceWriter:
        return TraceWriter(self.workspace.trace, secrets=self.secrets)


# -- Stop -------------------------------------------------------------------------------------------------


def _session_index(state: HookState, session_id: str) -> int:
    if session_id and session_id not in state.sessions:
        state.sessions.append(session_id)
    return state.sessions.index(session_id) + 1 if session_id in state.sessions else 0


def current_goal(deps: HookDeps) -> tuple[GoalStatus, list[str]]:
    """The goal status of the current candidate file, and the store's reading problems."""
    return deps.goal.status(content_hash(deps.workspace.candidate))


def _ask(deps: HookDeps, moment: Moment, evidence: str, session: int) -> ChosenQuestion | None:
    """Pick the moment's question and trace the detection (its evidence and why this question, the ladder's
    rung included, or why none) and the question asked."""
    picked = deps.questions.pick(moment, evidence)
    why = f"no question: {picked.reason}" if isinstance(picked, NoQuestion) else picked.reason
    deps.trace.write(MomentDetected(session=session, moment=moment, evidence=f"{evidence}; {why}" if why else evidence))
    if isinstance(picked, NoQuestion):
        return None
    deps.trace.write(picked.to_event(session))
    return picked


def _stop_moment(deps: HookDeps, status: GoalStatus, last: str, now: float) -> tuple[Moment, str]:
    """The moment of a blocked stop, from the situation first: correctness failing is a failure explained
    away (whatever the final message says), else the goal unmet is a claimed limit or completion. The
    detectors' evidence is used when they agree; else the goal's numbers, with what the final message
    dismissed or claimed."""
    found = dict(deps.moments.detect(read_trace(deps.workspace.trace).events, now))
    failing = [f.scenario_id for f in status.failing_scenarios]
    moment = Moment.EXPLAINED_FAILURE if failing or Moment.EXPLAINED_FAILURE in found else Moment.CLAIMED_LIMIT
    if moment in found:
        return moment, found[moment]
    if moment is Moment.EXPLAINED_FAILURE:
        detail = f"stop attempt while {len(failing)} correctness scenario(s) fail ({', '.join(failing[:3])})"
    else:
        detail = f"stop attempt with the goal {status.state.value}"
    reading = read_words(last)
    said = f"; its final message: {reading.summary(moment)}" if reading.holds(moment) else ""
    return moment, detail + said


def handle_stop(payload: dict[str, Any], deps: HookDeps) -> HookAnswer:
    """Let the agent stop only when the goal is met (or a budget is spent); else block with a question."""
    if not isinstance(payload, dict):
        return broken_answer(WireEvent.STOP, "the hook input is not a JSON object", deps.agent, deps.hook_state)
    now = deps.clock()
    session_id = str(payload.get("session_id") or "")

    def register(state: HookState) -> None:
        state.started_at = state.started_at if state.started_at is not None else now
        if deps.budget is not None:
            state.budget = deps.budget
        _session_index(state, session_id)

    state = update_state(deps.hook_state, register)
    session = _session_index(state, session_id)
    last = payload.get("last_assistant_message")
    deps.trace.write(StopAttempt(session=session, last_message=last if isinstance(last, str) else ""))
    status, problems = current_goal(deps)
    note = "\n".join(f"quaere: store: {p}" for p in problems)
    if status.met:
        answer = allow_answer(render_goal(status, now), note, goal_status=StopStatus.MET)
        deps.trace.write(stop_decision(answer, session))
        return answer
    spent = state.budget_spent(now)
    if spent is not None:
        budget, limit, used = spent
        deps.trace.write(BudgetSpent(session=session, budget=budget, limit=limit, used=used))
        reason = f"quaere: {budget} budget spent ({used:g} of {limit:g}); stopping with the goal {status.state.value}."
        answer = allow_answer(reason + "\n" + render_goal(status, now), note, goal_status=StopStatus.BUDGET_SPENT)
        deps.trace.write(stop_decision(answer, session, reason))
        return answer
    reason = render_goal(status, now)
    moment, evidence = _stop_moment(deps, status, last if isinstance(last, str) else "", now)
    picked = _ask(deps, moment, evidence, session)
    if problems:
        reason += "\n" + "\n".join(f"store problem: {p}" for p in problems)
    if picked is not None:
        reason += f"\n\nQuestion: {picked.text}"
    update_state(deps.hook_state, lambda s: setattr(s, "blocks", s.blocks + 1))
    answer = block_answer(deps.agent, reason, note, goal_status=StopStatus(status.state.value))
    deps.trace.write(stop_decision(answer, session))
    return answer


# -- PostToolUse ----------------------------------------------------------------------------------------


def _ran_eval(payload: dict[str, Any]) -> bool:
    tool_input = payload.get("tool_input")
    command = tool_input.get("command", "") if isinstance(tool_input, dict) else ""
    if isinstance(command, list):  # Codex may pass an argv list, e.g. ["bash", "-lc", "quaere eval"]
        command = " ".join(str(part) for part in command)
    return isinstance(command, str) and "quaere eval" in command


def _record_words(payload: dict[str, Any], deps: HookDeps, session: int) -> None:
    """What the model said since the last hook, from the transcript (the explained-failure detector reads it)."""
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not path:
        return
    texts: list[str] = []

    def advance(state: HookState) -> None:
        found, state.transcript_lines[path] = new_assistant_texts(Path(path), state.transcript_lines.get(path, 0))
        texts.extend(found)

    update_state(deps.hook_state, advance)
    for text in texts:
        deps.trace.write(AgentMessage(session=session, role="assistant", text=cut(text)[0]))


def _record_tool(payload: dict[str, Any], deps: HookDeps, session: int) -> None:
    _record_words(payload, deps, session)
    call_id = str(payload.get("tool_use_id") or "")
    text_in = json.dumps(payload.get("tool_input"), default=str)
    deps.trace.write(
        ToolCall(session=session, call_id=call_id, tool=str(payload.get("tool_name") or "?"), input=cut(text_in)[0])
    )
    failed = tool_failed(payload)
    response = payload.get("error") if failed else payload.get("tool_response")
    full = response if isinstance(response, str) else json.dumps(response, default=str)
    output, digest = cut(full)
    deps.trace.write(ToolResult(session=session, call_id=call_id, output=output, output_sha256=digest, is_error=failed))


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
    """Ask the question of a moment that holds: after an evaluation a suspicious gain or a plateau, after
    any tool a failure explained away or a limit claimed mid-turn (the model's words come later).

    Serves PostToolUse and Claude Code's PostToolUseFailure (a tool that exited non-zero, such as
    ``quaere eval`` on a failing candidate) alike.
    """
    if not isinstance(payload, dict):
        return broken_answer(WireEvent.POST_TOOL_USE, "the hook input is not a JSON object", deps.agent, None)
    state = read_state(deps.hook_state)
    session = _session_index(state, str(payload.get("session_id") or ""))
    if deps.record_tool_events:
        _record_tool(payload, deps, session)
    evaluations, problems = deps.read_evaluations()
    note = "\n".join(f"quaere: store: {p}" for p in problems)
    seen = state.ledger_lines_seen
    evaluated = len(evaluations) > seen or _ran_eval(payload)
    if deps.summarize is not None and len(evaluations) > seen:
        _summarize_new(evaluations[seen:], deps, session)
    # Gains and plateaus are judged right after an evaluation; a failure explained away or a limit claimed
    # shows in the words the model writes later, so those are looked for after any tool.
    wanted = POST_TOOL_MOMENTS if evaluated else WORD_MOMENTS
    found = deps.moments.detect(read_trace(deps.workspace.trace).events, deps.clock())
    asked_key = ""
    picked = None
    for moment, evidence in found:
        key = f"{moment.value}@{len(evaluations)}"
        if moment not in wanted or key in state.asked_moments:
            continue
        picked = _ask(deps, moment, evidence, session)
        asked_key = key
        break

    def remember(s: HookState) -> None:
        _session_index(s, str(payload.get("session_id") or ""))
        s.ledger_lines_seen = max(s.ledger_lines_seen, len(evaluations))
        if asked_key:
            s.asked_moments.append(asked_key)

    update_state(deps.hook_state, remember)
    if picked is None:
        return HookAnswer(None, 0, note)
    event = WireEvent.POST_TOOL_USE_FAILURE if tool_failed(payload) else WireEvent.POST_TOOL_USE
    return context_answer(deps.agent, event, f"Question: {picked.text}", note)


# -- UserPromptSubmit -------------------------------------------------------------------------------------


def handle_prompt(payload: dict[str, Any], deps: HookDeps) -> HookAnswer:
    """The campaign-start question, once per campaign, as additional context of the first prompt."""
    if not isinstance(payload, dict):
        return broken_answer(WireEvent.USER_PROMPT_SUBMIT, "the hook input is not a JSON object", deps.agent, None)
    now = deps.clock()
    first: list[bool] = []

    def claim(state: HookState) -> None:
        state.started_at = state.started_at if state.started_at is not None else now
        _session_index(state, str(payload.get("session_id") or ""))
        first.append(not state.campaign_start_asked)
        state.campaign_start_asked = True

    state = update_state(deps.hook_state, claim)
    session = _session_index(state, str(payload.get("session_id") or ""))
    prompt = payload.get("prompt")
    if deps.record_tool_events and isinstance(prompt, str) and prompt:
        deps.trace.write(AgentMessage(session=session, role="user", text=cut(prompt)[0]))
    if not first[0]:
        return HookAnswer(None)
    picked = _ask(deps, Moment.CAMPAIGN_START, "first prompt of the campaign", session)
    if picked is None:
        return HookAnswer(None)
    return context_answer(deps.agent, WireEvent.USER_PROMPT_SUBMIT, f"Question: {picked.text}")


__all__ = [
    "GoalState",
    "HookAnswer",
    "HookDeps",
    "MomentDetector",
    "QuestionPicker",
    "broken_answer",
    "current_goal",
    "handle_post_tool",
    "handle_prompt",
    "handle_stop",
]
