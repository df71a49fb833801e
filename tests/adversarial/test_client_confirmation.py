"""Attack (separate-user mode, red-team F1): any local user may write to the evaluator service's socket, and the
request has a ``started_by`` field. The agent sends its own run labelled ``"started_by": "confirmation"``, so one
run of its choosing is quaere's confirming evaluation and the goal is MET; or it sends such runs after quaere's
three confirmations fell short, to turn "not reproducible" into MET.

Defence: ``started_by`` is an ask, never a label. The service runs a confirmation only when its own store says
one is due for those bytes (the goal is UNCONFIRMED: the pooled full runs hold, fewer than three confirmations
ran), and only as a full run; otherwise it refuses and evaluates nothing. Driven through
:meth:`EvaluatorService.answer`, the bytes a socket connection hands it, with a stand-in evaluator.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.hooks.factories import bench as timed
from tests.hooks.factories import evaluation

from quaere.goal import MAX_CONFIRMATIONS, GoalState
from quaere.goal_source import store_goal
from quaere.records import Verdict
from quaere.serve.access import ServiceConfirmer
from quaere.serve.client import ServiceClient
from quaere.serve.protocol import REPLY, Recorded, Refused
from quaere.serve.server import EvaluatorService
from quaere.store.pinning import init_workspace, pinned_task
from quaere.store.records import Starter
from quaere.task.loader import load_task
from quaere.workspace import content_hash

FAST, SLOW = 2.0, 1.0  # the initial kernel's time over the candidate's: the target is 1.2x


class Evaluator:
    """Stands in for ``run_evaluation``: every scenario passes; the next ratio of ``ratios`` is each
    configuration's speed-up (FAST once they run out)."""

    def __init__(self, *ratios: float) -> None:
        self.ratios, self.calls = list(ratios), 0
        self.task = load_task("cpu_softmax")

    def __call__(self, task, candidate, options, progress):
        self.calls += 1
        ratio = self.ratios.pop(0) if self.ratios else FAST
        ev = evaluation(content_hash(candidate), created_at=float(self.calls),
                        verdicts=[(s.id, Verdict.PASSED) for s in self.task.module.correctness_scenarios()],
                        benchmarks=[timed(s.id, 1.0, ratio) for s in self.task.module.benchmark_scenarios()])
        return ev.model_copy(update={"task": "cpu_softmax"})


@pytest.fixture
def ws(tmp_path, store):
    workspace, _ = init_workspace(store, tmp_path / "ws", "cpu_softmax", False, tmp_path)
    return workspace


def ask(service: EvaluatorService, ws, **fields) -> Recorded | Refused:
    """The raw request any local user can write on the socket (as the red team's reproducer wrote it)."""
    data = ws.candidate.read_bytes()
    request = {"op": "evaluate", "workspace_id": ws.id, "source_name": ws.candidate.name,
               "source_b64": base64.b64encode(data).decode(), **fields}
    return REPLY.validate_json(service.answer(json.dumps(request).encode()))


def goal(store, ws):
    registration = store.registration(ws.id)
    return store_goal(store, registration, pinned_task(store, registration)).status(content_hash(ws.candidate))[0]


def test_a_confirmation_asked_for_with_no_holding_run_is_refused_and_nothing_is_recorded(store, ws):
    evaluator = Evaluator()
    service = EvaluatorService(store, evaluator)
    reply = ask(service, ws, started_by="confirmation")
    assert isinstance(reply, Refused), reply
    assert "field 'started_by'" in reply.reason and "no confirmation is due" in reply.reason, reply.reason
    assert f"store is {GoalState.NO_EVALUATION.value}," in reply.reason
    assert evaluator.calls == 0 and store.read(ws.id).entries == ()
    assert goal(store, ws).state is GoalState.NO_EVALUATION


def test_a_confirmation_is_recorded_as_one_when_due_and_only_as_a_full_run(store, ws):
    evaluator = Evaluator()
    service = EvaluatorService(store, evaluator)
    mine = ask(service, ws)  # the agent's own run: the caller's
    assert isinstance(mine, Recorded) and mine.entry.started_by is Starter.CALLER
    assert goal(store, ws).state is GoalState.UNCONFIRMED
    partial = ask(service, ws, started_by="confirmation", seed=7, benchmark=False)
    assert isinstance(partial, Refused) and "full run" in partial.reason and "seed, benchmark" in partial.reason
    assert evaluator.calls == 1
    confirmed = ask(service, ws, started_by="confirmation")
    assert isinstance(confirmed, Recorded) and confirmed.entry.started_by is Starter.CONFIRMATION
    assert confirmed.entry.full and goal(store, ws).state is GoalState.MET
    again = ask(service, ws, started_by="confirmation")  # met: nothing is due
    assert isinstance(again, Refused) and f"store is {GoalState.MET.value}," in again.reason and evaluator.calls == 2


def test_after_the_capped_confirmations_fell_short_none_is_run_again(store, ws):
    evaluator = Evaluator(*[FAST] * 5, *[SLOW] * MAX_CONFIRMATIONS, FAST)
    service = EvaluatorService(store, evaluator)
    for _ in range(5):
        assert ask(service, ws).entry.started_by is Starter.CALLER
    for _ in range(MAX_CONFIRMATIONS):
        assert ask(service, ws, started_by="confirmation").entry.started_by is Starter.CONFIRMATION
    status = goal(store, ws)
    assert status.state is GoalState.UNMET and "not reproducible" in status.problems[-1]
    lucky = ask(service, ws, started_by="confirmation")
    assert isinstance(lucky, Refused) and f"store is {GoalState.UNMET.value}," in lucky.reason
    assert evaluator.calls == 5 + MAX_CONFIRMATIONS and goal(store, ws).state is GoalState.UNMET


@dataclass(frozen=True)
class Loopback(ServiceClient):
    """quaere's own client, its requests answered by ``service`` as a socket connection's are."""

    service: EvaluatorService | None = None

    def call(self, request):
        return REPLY.validate_json(self.service.answer(request.model_dump_json().encode()))


def test_quaeres_own_confirmer_still_gets_its_confirmation_from_the_service(store, ws):
    service = EvaluatorService(store, Evaluator())
    assert ask(service, ws).entry.started_by is Starter.CALLER
    registration = store.registration(ws.id)
    confirmer = ServiceConfirmer(Loopback(Path("unused.sock"), service=service), store, ws)
    judged = store_goal(store, registration, pinned_task(store, registration), confirmer)
    status, _ = judged.status(content_hash(ws.candidate))  # as `quaere goal --confirm` and the Stop hook ask it
    assert status.state is GoalState.MET and status.confirmations == 1
    assert [e.started_by for e in store.read(ws.id).entries] == [Starter.CALLER, Starter.CONFIRMATION]


def test_a_workspace_id_that_is_not_one_or_names_another_workspaces_registration_is_refused(store, ws, tmp_path):
    """The id is the client's too: a path (``../..``, absolute) would name a folder outside the store's workspaces,
    and a signed registration copied into another id's folder would be read as that workspace's."""
    service = EvaluatorService(store, evaluator := Evaluator())
    for bad in ("../..", str(tmp_path), ws.id.upper()):
        reply = ask(service, ws, workspace_id=bad)
        assert isinstance(reply, Refused) and "expected 24 lowercase hex digits" in reply.reason, (bad, reply)
    other = "0" * 24
    store.registration_path(other).parent.mkdir(parents=True)
    store.registration_path(other).write_bytes(store.registration_path(ws.id).read_bytes())
    reply = ask(service, ws, workspace_id=other)
    assert isinstance(reply, Refused) and f"signed for workspace {ws.id}, not {other}" in reply.reason, reply
    assert evaluator.calls == 0
