"""Builds the hooks' dependencies for a workspace from the real parts: the signed store, the pinned task,
bank, queue, detectors.

Kept apart from :mod:`quaere.hooks` (which only sees Protocols) so the handlers stay testable with fakes
and the CLI stays a parser. Heavy or optional parts are imported inside the functions.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from quaere.goal_source import Confirmer, store_goal
from quaere.hooks.dialect import HookDialect
from quaere.hooks.handlers import HookDeps
from quaere.hooks.state import StateFile
from quaere.records import Evaluation
from quaere.store.pinning import check_workspace, pinned_task
from quaere.store.store import Store, StoreError, StoreRead
from quaere.workspace import Workspace


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
    """Deps for ``workspace``'s pinned task, judged on ``store``, with the questions a person queued first
    and the bank's choice (seeded as ``quaere ask`` previews it) after.

    Raises StoreError or TaskError naming the file when the workspace disagrees with its registration
    (``workspace.toml`` edited, the task changed, a folder shadowing the task's name).
    """
    from quaere.evaluate.summary import to_trace_event
    from quaere.questions.ask import question_seed
    from quaere.questions.bank import load_bank
    from quaere.questions.picking import Detectors, QueuedQuestions
    from quaere.questions.queue import QueueFile, store_queue
    from quaere.questions.situation import context_of
    from quaere.questions.sources import BankSource

    registration = store.registration(workspace.id)
    check_workspace(store, workspace, registration, (workspace.root,))
    task = pinned_task(store, registration)

    def read() -> StoreRead:
        return store.read(workspace.id)

    def evaluations() -> tuple[Sequence[Evaluation], Sequence[str]]:
        found = read()
        return found.evaluations, [p.render() for p in found.problems]

    goal = store_goal(store, registration, task, confirmer)
    try:
        queue: QueueFile | str = store_queue(store, workspace.id)
    except StoreError as exc:
        queue = str(exc)
    if isinstance(queue, QueueFile) and queue.signer is None:
        queue = f"{queue.path}: this user cannot sign the store, so a delivered question could not be marked"
    values: dict[str, Any] = dict(
        workspace=workspace,
        spec=task.spec,
        questions=QueuedQuestions(workspace, BankSource(load_bank(), question_seed(workspace)), context_of(task.spec),
                                  queue=queue),
        moments=Detectors(),
        read_evaluations=evaluations,
        goal=goal,
        hook_state=hook_state_file(store, workspace),
        summarize=lambda evaluation: to_trace_event(evaluation, task.spec),
        agent=agent,
        budget=registration.budget,
    )
    values.update(overrides)
    return HookDeps(**values)
