"""Builds the hooks' dependencies for a workspace from the real parts: the signed store, the pinned task,
bank, queue, detectors.

Kept apart from :mod:`quaere.hooks` (which only sees Protocols) so the handlers stay testable with fakes
and the CLI stays a parser. Heavy or optional parts are imported inside the functions.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from quaere.goal import Expected
from quaere.goal_source import Confirmer, StoreGoal
from quaere.hooks.dialect import HookDialect
from quaere.hooks.handlers import HookDeps, PickedQuestion
from quaere.hooks.state import StateFile
from quaere.records import Evaluation, Moment
from quaere.store.pinning import check_workspace, pinned_task
from quaere.store.store import Store, StoreError, StoreRead
from quaere.task.loader import Task
from quaere.trace import TraceEvent
from quaere.workspace import Workspace


@dataclass(frozen=True)
class WorkspaceQuestions:
    """A question a person queued with ``quaere ask`` first; else the bank's choice for the moment."""

    workspace: Workspace
    task: Task

    def pick(self, moment: Moment, evidence: str) -> PickedQuestion | None:
        from quaere.questions.queue import QueueEmpty, pop_next

        queued = pop_next(self.workspace)
        if not isinstance(queued, QueueEmpty):
            return PickedQuestion(text=queued.text, source=queued.source, entry_id=queued.entry_id, kind=queued.kind)
        return self._from_bank(moment, evidence)

    def _from_bank(self, moment: Moment, evidence: str) -> PickedQuestion | None:
        from quaere.questions.ask import context_of
        from quaere.questions.bank import load_bank
        from quaere.questions.sources import BankExhausted, BankSource, asked_ids
        from quaere.trace import read_trace

        # One seed per workspace: the same history gives the same question, two campaigns differ.
        seed = int(hashlib.sha256(str(self.workspace.root).encode()).hexdigest()[:8], 16)
        asked = asked_ids(read_trace(self.workspace.trace).events)
        try:
            chosen = BankSource(load_bank(), seed).choose(moment, context_of(self.task.spec), asked, evidence)
        except BankExhausted:
            return None
        return PickedQuestion(text=chosen.text, source="bank", entry_id=chosen.entry_id, kind=chosen.kind)


@dataclass(frozen=True)
class DetectorAdapter:
    """The five detectors of :mod:`quaere.questions.moments` as the hooks' MomentDetector."""

    def detect(self, events: Sequence[TraceEvent], now: float) -> list[tuple[Moment, str]]:
        from quaere.questions.moments import detect_moments

        found = detect_moments(list(events), now=now)
        return [(m.moment, m.evidence) for m in found]


def scenario_ids(task: Task) -> Expected:
    """The task's correctness and benchmark ids; None where the module cannot list them here."""
    lists: list[tuple[str, ...] | None] = []
    for name in ("correctness_scenarios", "benchmark_scenarios"):
        try:
            lists.append(tuple(s.id for s in getattr(task.module, name)()))
        except Exception:  # a task module that needs a GPU to list: judge on what the evaluation holds
            lists.append(None)
    return Expected(correctness=lists[0], benchmarks=lists[1])


def hook_state_file(store: Store, workspace: Workspace) -> StateFile:
    """The Stop hook's counters: signed, in the store; in the workspace (untrusted) only where this user
    cannot write the store (installed hooks running as the agent's user beside an evaluator service)."""
    folder = store.folder(workspace.id)
    if os.access(folder, os.W_OK):
        try:
            return StateFile(folder, store.signer())
        except StoreError:
            pass  # the key belongs to the service: fall through
    return StateFile(workspace.state)


def build_deps(
    workspace: Workspace, store: Store, agent: HookDialect, *, confirmer: Confirmer | None = None, **overrides: Any
) -> HookDeps:
    """Deps for ``workspace``'s pinned task, judged on ``store``.

    Raises StoreError or TaskError naming the file when the workspace disagrees with its registration
    (``workspace.toml`` edited, the task changed, a folder shadowing the task's name).
    """
    from quaere.evaluate.summary import to_trace_event

    registration = store.registration(workspace.id)
    check_workspace(store, workspace, registration, (workspace.root,))
    task = pinned_task(store, registration)

    def read() -> StoreRead:
        return store.read(workspace.id)

    def evaluations() -> tuple[Sequence[Evaluation], Sequence[str]]:
        found = read()
        return found.evaluations, [p.render() for p in found.problems]

    goal = StoreGoal(task.spec, read, registration.task.sha256, scenario_ids(task), confirmer)
    values: dict[str, Any] = dict(
        workspace=workspace,
        spec=task.spec,
        questions=WorkspaceQuestions(workspace, task),
        moments=DetectorAdapter(),
        read_evaluations=evaluations,
        goal=goal,
        hook_state=hook_state_file(store, workspace),
        summarize=lambda evaluation: to_trace_event(evaluation, task.spec),
        agent=agent,
        budget=registration.budget,
    )
    values.update(overrides)
    return HookDeps(**values)
