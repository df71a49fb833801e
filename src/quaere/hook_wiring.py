"""Builds the hooks' dependencies for a workspace from the real parts: ledger, task, bank, queue, detectors.

Kept apart from :mod:`quaere.hooks` (which only sees Protocols) so the handlers stay testable with fakes
and the CLI stays a parser. Heavy or optional parts are imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from quaere.goal import is_timing_only
from quaere.hook_install import Agent
from quaere.hooks import HookDeps
from quaere.records import Evaluation
from quaere.task.loader import Task, load_task
from quaere.workspace import Workspace


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


def build_deps(workspace: Workspace, agent: Agent, *, retime: bool = False, **overrides: Any) -> HookDeps:
    """Deps for ``workspace``'s task. Raises TaskError/WorkspaceError with a clear message when broken."""
    from quaere.evaluate.summary import to_trace_event
    from quaere.questions.ask import question_seed
    from quaere.questions.bank import load_bank
    from quaere.questions.picking import Detectors, QueuedQuestions
    from quaere.questions.situation import context_of
    from quaere.questions.sources import BankSource

    task = load_task(workspace.task)
    correctness, benchmarks = scenario_ids(task)
    values: dict[str, Any] = dict(
        workspace=workspace,
        spec=task.spec,
        questions=QueuedQuestions(workspace, BankSource(load_bank(), question_seed(workspace)), context_of(task.spec)),
        moments=Detectors(),
        read_evaluations=ledger_reader(workspace, task.spec.name),
        summarize=lambda evaluation: to_trace_event(evaluation, task.spec),
        agent=agent,
        retimer=EvaluatorRetimer(workspace, task) if retime else None,
        expected_correctness=correctness,
        expected_benchmarks=benchmarks,
    )
    values.update(overrides)
    return HookDeps(**values)
