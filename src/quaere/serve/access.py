"""Which evaluator a command reaches: this process (same-user mode) or the store's service (separate-user).

A store whose root holds a signed ``service.json`` belongs to an evaluator service: ``quaere eval`` then
sends the candidate's bytes there, and the goal's confirmation too. Otherwise everything runs here and
is signed with the user's own key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from quaere.evaluate.options import load_scenarios_file
from quaere.evaluate.run import Progress
from quaere.evaluate.source_file import unlinked
from quaere.goal_source import Confirmer
from quaere.recording import (
    EvalRequest,
    Evaluate,
    LocalConfirmer,
    evaluate_in_workspace,
    evaluate_outside_workspace,
    keep_workspace_copies,
)
from quaere.records import Evaluation
from quaere.serve.client import ServiceClient, ServiceError
from quaere.serve.protocol import Evaluate as EvaluateRequest
from quaere.serve.server import read_service_info
from quaere.store.pinning import check_workspace, identity_of, pinned_task
from quaere.store.records import EvaluationEntry, Starter
from quaere.store.store import Store, StoreError
from quaere.task.loader import load_task
from quaere.task.spec import TaskError
from quaere.workspace import Workspace, WorkspaceError, content_hash, open_workspace


class EvalCommandError(ValueError):
    """``quaere eval`` cannot run as asked; the message names the file or option."""


@dataclass(frozen=True)
class EvalDone:
    evaluation: Evaluation
    entry: EvaluationEntry | None  # None outside a workspace: nothing signed
    ledger: Path | None = None  # where the plain record went outside a workspace


def service_of(store: Store) -> ServiceClient | None:
    """The store's evaluator service, or None in same-user mode."""
    info = read_service_info(store) if (store.root / "service.json").exists() else None
    return ServiceClient(Path(info.socket)) if info is not None else None


def _evaluate_here() -> Evaluate:
    """``run_evaluation`` in this process, on the pool ``QUAERE_POOL`` names when it is set."""
    from quaere.evaluate.options import pool_setting
    from quaere.evaluate.pool import pooled_evaluate

    return pooled_evaluate(pool_setting())


def _default_task() -> str:
    from quaere.evaluate.device import default_task_name, gpu_present

    return default_task_name(gpu_present())


def candidate_problem(candidate: Path) -> str:
    """Why ``candidate`` (a link, or not a regular file) cannot be evaluated, in one line naming what it is."""
    if candidate.is_symlink():
        return (f"{candidate}: a symbolic link (to {os.readlink(candidate)}); the candidate must be a regular file "
                "holding the kernel's source: copy it there")
    if candidate.is_dir():
        return f"{candidate}: is a directory, not a kernel source file; name the file inside it"
    if candidate.exists():
        return f"{candidate}: not a regular file; the candidate must be a kernel source file"
    return f"{candidate}: no such candidate file"


def run_eval_command(request: EvalRequest, store: Store, cwd: Path, progress: Progress | None,
                     evaluate: Evaluate | None = None) -> EvalDone:
    """Everything ``quaere eval`` does after parsing; :class:`EvalCommandError` for what it refuses.

    ``evaluate`` runs the evaluation here (default: :func:`_evaluate_here`); with an evaluator service the
    service evaluates, on whatever pool it was started with."""
    evaluate = evaluate or _evaluate_here()
    try:
        workspace = open_workspace(cwd)
    except WorkspaceError as exc:
        if "not inside a quaere workspace" not in str(exc):
            raise EvalCommandError(str(exc)) from None
        workspace = None
    candidate = request.candidate or (workspace.candidate if workspace else None)
    if candidate is not None and (candidate.is_symlink() or not candidate.is_file()):
        raise EvalCommandError(candidate_problem(candidate))
    try:
        if workspace is None:
            evaluation, ledger = evaluate_outside_workspace(request, cwd, _default_task(), evaluate, progress)
            return EvalDone(evaluation, None, ledger)
        client = service_of(store)
        if client is None:
            entry = evaluate_in_workspace(store, workspace, request, evaluate, cwd, progress)
        else:
            entry = evaluate_by_service(client, store, workspace, request, cwd)
    except (StoreError, TaskError, ServiceError) as exc:
        raise EvalCommandError(str(exc)) from None
    return EvalDone(entry.evaluation, entry)


def evaluate_by_service(
    client: ServiceClient, store: Store, workspace: Workspace, request: EvalRequest, cwd: Path
) -> EvaluationEntry:
    """Separate-user mode: the same refusals as here, then the source bytes go to the service."""
    registration = store.registration(workspace.id)
    check_workspace(store, workspace, registration, (workspace.root, cwd))
    if request.task is not None and identity_of(load_task(request.task, (workspace.root, cwd))).sha256 != (
        registration.task.sha256
    ):
        raise EvalCommandError(
            f"--task {request.task}: the evaluator service judges only the task pinned for this workspace "
            f"('{registration.task.reference}'); evaluate other tasks outside the workspace"
        )
    candidate = unlinked(request.candidate or workspace.candidate)
    scenarios = tuple(load_scenarios_file(request.scenarios_file)) if request.scenarios_file else None
    entry = client.evaluate(EvaluateRequest.of(
        workspace.id, candidate.name, candidate.read_bytes(), scenarios=scenarios, seed=request.seed,
        benchmark=request.benchmark, no_device=request.no_device,
    ))
    keep_workspace_copies(workspace, entry, candidate, pinned_task(store, registration))
    return entry


@dataclass(frozen=True)
class ServiceConfirmer:
    """The goal's confirmation through the evaluator service (separate-user mode)."""

    client: ServiceClient
    store: Store
    workspace: Workspace

    def confirm(self, candidate_hash: str) -> None:
        candidate = unlinked(self.workspace.candidate)
        data = candidate.read_bytes()
        if content_hash(candidate) != candidate_hash:
            return  # changed since the goal was read: the next check judges the new version
        entry = self.client.evaluate(
            EvaluateRequest.of(self.workspace.id, candidate.name, data, started_by=Starter.CONFIRMATION)
        )
        registration = self.store.registration(self.workspace.id)
        keep_workspace_copies(self.workspace, entry, candidate, pinned_task(self.store, registration))


def confirmer_for(store: Store, workspace: Workspace, progress: Progress | None = None) -> Confirmer:
    """The store's service when it has one, else a confirmation run here (told to ``progress``)."""
    client = service_of(store)
    if client is not None:
        return ServiceConfirmer(client, store, workspace)
    return LocalConfirmer(store, workspace, _evaluate_here(), progress)
