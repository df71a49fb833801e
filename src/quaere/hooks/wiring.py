"""Builds the hooks' dependencies for a workspace from the real parts: ledger, task, bank, queue, detectors.

Kept apart from :mod:`quaere.hooks` (which only sees Protocols) so the handlers stay testable with fakes
and the CLI stays a parser. Heavy or optional parts are imported inside the functions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from quaere.goal import is_timing_only
from quaere.hooks.dialect import HookDialect
from quaere.hooks.handlers import HookDeps, PickedQuestion
from quaere.records import Evaluation, Moment
from quaere.task.loader import Task, load_task
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


@dataclass(frozen=True)
class EvaluatorRetimer:
    """Re-times named configurations of the current candidate through the real evaluator."""

    workspace: Workspace
    task: Task

    def retime(self, benchmark_ids: Sequence[str]) -> Evaluation:
        from quaere.evaluate import EvalOptions, run_evaluation
        from quaere.evaluate.ledger import append_evaluation

        options = EvalOptions(correctness=False, benchmark_ids=frozenset(benchmark_ids))
        evaluation = run_evaluation(self.task, self.workspace.candidate, options)
        if is_timing_only(evaluation):  # on record like any other evaluation; a run that timed nothing is not
            self.workspace.keep_version(self.workspace.candidate)
            append_evaluation(self.workspace.ledger, evaluation)
        return evaluation


def scenario_ids(task: Task) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """(correctness ids, benchmark ids) of the task; None where the module cannot list them here."""
    lists: list[tuple[str, ...] | None] = []
    for name in ("correctness_scenarios", "benchmark_scenarios"):
        try:
            lists.append(tuple(s.id for s in getattr(task.module, name)()))
        except Exception:  # a task module that needs a GPU to list: judge on what the evaluation holds
            lists.append(None)
    return lists[0], lists[1]


def ledger_reader(workspace: Workspace, task_name: str) -> Callable[[], tuple[Sequence[Evaluation], Sequence[str]]]:
    from quaere.evaluate.ledger import read_ledger

    def read() -> tuple[Sequence[Evaluation], Sequence[str]]:
        ledger = read_ledger(workspace.ledger)
        return [e for e in ledger.evaluations if e.task == task_name], list(ledger.problems)

    return read


def build_deps(workspace: Workspace, agent: HookDialect, *, retime: bool = False, **overrides: Any) -> HookDeps:
    """Deps for ``workspace``'s task. Raises TaskError/WorkspaceError with a clear message when broken."""
    from quaere.evaluate.summary import to_trace_event

    task = load_task(workspace.task)
    correctness, benchmarks = scenario_ids(task)
    values: dict[str, Any] = dict(
        workspace=workspace,
        spec=task.spec,
        questions=WorkspaceQuestions(workspace, task),
        moments=DetectorAdapter(),
        read_evaluations=ledger_reader(workspace, task.spec.name),
        summarize=lambda evaluation: to_trace_event(evaluation, task.spec),
        agent=agent,
        retimer=EvaluatorRetimer(workspace, task) if retime else None,
        expected_correctness=correctness,
        expected_benchmarks=benchmarks,
    )
    values.update(overrides)
    return HookDeps(**values)
