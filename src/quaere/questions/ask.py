"""``quaere ask`` as a library: which moment holds in a workspace, what to ask, and recording the choice.

Recording writes a ``QuestionAsked`` event to the trace and queues the question, so the Stop hook delivers
it to the agent at its next stop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from quaere.questions.bank import Bank
from quaere.questions.moments import DEFAULT_CONFIG, MomentCheck, MomentsConfig, check_moments
from quaere.questions.queue import enqueue
from quaere.questions.sources import BankSource, ChosenQuestion, Suggestion, TaskContext, arch_of_target, asked_ids
from quaere.records import Moment
from quaere.task.loader import resolve_task_folder
from quaere.task.spec import TaskSpec, parse_task_toml
from quaere.trace import TraceWriter, read_trace
from quaere.workspace import Workspace


class NoMomentHolds(LookupError):
    """No moment holds now and none was named."""


def load_task_spec(ws: Workspace) -> TaskSpec:
    """The workspace task's ``task.toml`` (a shipped name, or a folder relative to the workspace or here).

    Only the spec is read: the context needs the target and the comparisons, not the task's module.
    """
    local = ws.root / ws.task
    folder = local if (local / "task.toml").exists() else resolve_task_folder(ws.task)
    return parse_task_toml(Path(folder) / "task.toml")


def context_of(spec: TaskSpec) -> TaskContext:
    """Architecture from the target (sm_90a -> hopper ...), and whether comparisons exist."""
    return TaskContext(arch=arch_of_target(spec.target), has_comparison=bool(spec.comparisons), task=spec.name)


@dataclass(frozen=True)
class AskView:
    """What ``quaere ask`` shows: every moment's check, the moment chosen, and the suggestions for it."""

    checks: tuple[MomentCheck, ...]
    moment: Moment
    evidence: str
    suggestions: tuple[Suggestion, ...]
    context: TaskContext
    asked: tuple[str, ...]
    session: int
    trace_problems: tuple[str, ...] = ()


def select_moment(checks: list[MomentCheck], requested: Moment | None = None) -> tuple[Moment, str]:
    """The requested moment, else the most urgent one that holds; raise :class:`NoMomentHolds`."""
    if requested is not None:
        check = next(c for c in checks if c.moment is requested)
        note = check.evidence if check.holds else f"asked for by hand (detector: {check.evidence})"
        return requested, note
    for check in checks:
        if check.holds:
            return check.moment, check.evidence
    raise NoMomentHolds("no moment holds now; name one with --moment (" + ", ".join(m.value for m in Moment) + ")")


def ask_view(
    ws: Workspace,
    bank: Bank,
    context: TaskContext,
    requested: Moment | None = None,
    seed: int = 0,
    n: int = 3,
    now: float = math.nan,
    config: MomentsConfig = DEFAULT_CONFIG,
) -> AskView:
    """Read the workspace's trace, detect the moments and suggest ``n`` entries for the chosen one."""
    trace = read_trace(ws.trace)
    events = trace.events
    checks = check_moments(events, config, now)
    moment, evidence = select_moment(checks, requested)
    asked = asked_ids(events)
    suggestions = BankSource(bank, seed).suggest(moment, context, asked, n)
    session = max((e.session for e in events), default=0)
    return AskView(tuple(checks), moment, evidence, tuple(suggestions), context, tuple(asked), session, trace.problems)


def record_question(ws: Workspace, question: ChosenQuestion, session: int = 0) -> None:
    """Write the ``QuestionAsked`` event to the trace and queue the question for the next stop."""
    TraceWriter(ws.trace).write(question.to_event(session))
    enqueue(ws, question)
