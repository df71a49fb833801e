"""``quaere ask`` as a library: which moment holds in a workspace, what to ask, and recording the choice.

The preview is the real pick: the suggestions come from the same policy, the same seed
(:func:`question_seed`) and the same evidence (:func:`quaere.questions.situation.situation_of`) as the
hooks' choice, so suggestion 1 is what the next hook would ask for that moment. Recording queues the
question in the store (signed) and writes a ``QuestionAsked`` event to the trace, so the Stop hook delivers
it at the next stop.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from quaere.questions.bank import Bank
from quaere.questions.moments import DEFAULT_CONFIG, MomentCheck, MomentsConfig, check_moments
from quaere.questions.queue import QueueFile, enqueue
from quaere.questions.situation import TaskContext, situation_of
from quaere.questions.sources import BankSource, ChosenQuestion, Suggestion, asked_ids
from quaere.records import Moment
from quaere.task.loader import resolve_task_folder
from quaere.task.spec import TaskSpec, parse_task_toml
from quaere.trace import EvaluationDone, MomentDetected, TraceEvent, TraceWriter, read_trace
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


def _campaign_config(ws: Workspace) -> dict:
    """The persisted settings of the campaign that runs in ``ws`` ({} when none, or unreadable)."""
    from quaere.agents.state import StateError, load_state

    if not ws.campaign_state.exists():
        return {}
    try:
        return load_state(ws.campaign_state).config
    except StateError:
        return {}


def question_seed(ws: Workspace) -> int:
    """The seed of the bank's tie-breaks in ``ws``: the campaign's seed when a campaign runs there, else a
    hash of the workspace folder. The hooks, a campaign and ``quaere ask`` all take it from here."""
    seed = _campaign_config(ws).get("seed")
    if isinstance(seed, int):
        return seed
    return int(hashlib.sha256(str(ws.root.resolve()).encode()).hexdigest()[:8], 16)


def moments_config(ws: Workspace) -> MomentsConfig:
    """The detectors' settings in ``ws``: the campaign's when a campaign runs there, else the defaults, so
    ``quaere ask`` sees the moments the campaign's hooks see."""
    try:
        return MomentsConfig.model_validate(_campaign_config(ws).get("moments", {}))
    except ValidationError:
        return DEFAULT_CONFIG


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


def moment_in_force(events: Sequence[TraceEvent]) -> MomentDetected | None:
    """The latest moment a hook detected, while no evaluation has come since (it was already answered
    with a question, so no detector holds, but the situation has not moved on)."""
    for event in reversed(events):
        if isinstance(event, EvaluationDone):
            return None
        if isinstance(event, MomentDetected):
            return event
    return None


def select_moment(
    checks: Sequence[MomentCheck], requested: Moment | None = None, events: Sequence[TraceEvent] = ()
) -> tuple[Moment, str]:
    """The requested moment, else the most urgent one that holds, else the moment still in force (a
    follow-up question climbs its ladder); raise :class:`NoMomentHolds`."""
    if requested is not None:
        check = next(c for c in checks if c.moment is requested)
        note = check.evidence if check.holds else f"asked for by hand (detector: {check.evidence})"
        return requested, note
    for check in checks:
        if check.holds:
            return check.moment, check.evidence
    in_force = moment_in_force(events)
    if in_force is not None:
        return in_force.moment, f"still in force, already asked once: {in_force.evidence}"
    raise NoMomentHolds("no moment holds now; name one with --moment (" + ", ".join(m.value for m in Moment) + ")")


def ask_view(
    ws: Workspace,
    bank: Bank,
    context: TaskContext,
    requested: Moment | None = None,
    seed: int | None = None,
    n: int = 3,
    now: float = math.nan,
    config: MomentsConfig | None = None,
) -> AskView:
    """Read the workspace's trace, detect the moments and suggest ``n`` entries for the chosen one, in
    the order the hooks would ask them (``seed`` None: the workspace's :func:`question_seed`; ``config``
    None: the workspace's :func:`moments_config`)."""
    config = moments_config(ws) if config is None else config
    trace = read_trace(ws.trace)
    events = trace.events
    checks = check_moments(events, config, now)
    moment, evidence = select_moment(checks, requested, events)
    asked = asked_ids(events)
    situation = situation_of(events, context, config.plateau.min_gain_pct)
    source = BankSource(bank, question_seed(ws) if seed is None else seed)
    suggestions = source.suggest(moment, situation, asked, n)
    session = max((e.session for e in events), default=0)
    return AskView(
        tuple(checks), moment, evidence, tuple(suggestions), situation, tuple(asked), session, trace.problems
    )


def record_question(ws: Workspace, queue: QueueFile, question: ChosenQuestion, session: int = 0) -> None:
    """Queue the question (signed, in the store's ``queue``) for the next stop, then write the
    ``QuestionAsked`` event to the trace; :class:`~quaere.questions.queue.QueueError` (nothing written)
    when this user cannot sign the store's records."""
    enqueue(queue, question)
    TraceWriter(ws.trace).write(question.to_event(session))
