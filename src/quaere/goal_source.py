"""The goal as the hooks, ``quaere goal`` and ``quaere run`` ask it: read the verified store, judge, and
start the confirming evaluation when everything else holds.

Kept apart from :mod:`quaere.goal` (pure judgement) so the judgement is tested on records alone and this
wiring with a fake store reader and a fake confirmer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from quaere.goal import Expected, GoalState, GoalStatus, check_goal
from quaere.store.store import StoreRead
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
