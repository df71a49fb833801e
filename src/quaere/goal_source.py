"""The goal as the hooks, ``quaere goal``, ``quaere run`` and the evaluator service ask it: read the verified
store, judge, and start the confirming evaluation when everything else holds.

Kept apart from :mod:`quaere.goal` (pure judgement) so the judgement is tested on records alone and this
wiring with a fake store reader and a fake confirmer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from quaere.goal import Expected, GoalState, GoalStatus, check_goal
from quaere.store.records import Registration
from quaere.store.store import Store, StoreRead
from quaere.task.loader import Task
from quaere.task.spec import TaskSpec


class Confirmer(Protocol):
    """Runs the goal's confirming evaluation: a full evaluation of the current candidate, with a fresh seed,
    started by quaere and signed into the store (locally, or by the evaluator service)."""

    def confirm(self, candidate_hash: str) -> None: ...


class GoalJudge(Protocol):
    """What the hooks need: the goal of the candidate whose content hash is given, and the store's problems."""

    def status(self, candidate_hash: str) -> tuple[GoalStatus, list[str]]: ...


@dataclass(frozen=True)
class StoreGoal:
    """The goal on the signed store. With a ``confirmer``, an UNCONFIRMED goal gets its confirmation
    before the answer (one per call: the next stop attempt may start another, up to the cap)."""

    spec: TaskSpec
    read: Callable[[], StoreRead]
    pinned_sha256: str
    expected: Expected = field(default_factory=Expected)
    confirmer: Confirmer | None = None

    def _judge(self, candidate_hash: str) -> tuple[GoalStatus, list[str]]:
        read = self.read()
        problems = [p.render() for p in read.problems]
        status = check_goal(self.spec, read.entries, candidate_hash, self.pinned_sha256, self.expected, problems)
        return status, problems

    def status(self, candidate_hash: str) -> tuple[GoalStatus, list[str]]:
        status, problems = self._judge(candidate_hash)
        if status.state is GoalState.UNCONFIRMED and self.confirmer is not None:
            self.confirmer.confirm(candidate_hash)
            status, problems = self._judge(candidate_hash)
        return status, problems


def scenario_ids(task: Task) -> Expected:
    """The task's correctness and benchmark ids; None where the module cannot list them here."""
    lists: list[tuple[str, ...] | None] = []
    for name in ("correctness_scenarios", "benchmark_scenarios"):
        try:
            lists.append(tuple(s.id for s in getattr(task.module, name)()))
        except Exception:  # a task module that needs a GPU to list: judge on what the evaluation holds
            lists.append(None)
    return Expected(correctness=lists[0], benchmarks=lists[1])


def store_goal(store: Store, registration: Registration, task: Task, confirmer: Confirmer | None = None) -> StoreGoal:
    """The goal of ``registration``'s workspace on ``store``, as ``quaere goal``, the hooks and the evaluator
    service judge it: ``task`` is the pinned task's store copy."""
    return StoreGoal(task.spec, lambda: store.read(registration.workspace_id), registration.task.sha256,
                     scenario_ids(task), confirmer)
