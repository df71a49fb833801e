"""Putting an evaluation on record: what ``quaere eval`` does after parsing, and the goal's confirmation.

In a workspace, the evaluation runs the task pinned at ``quaere init`` (the store's own copy), is
classified full or partial, and is signed into the store; then a convenience copy goes to the
workspace's ledger and a summary to its trace (both untrusted, both only for people and reports).
Outside a workspace nothing is recorded for any goal: the evaluation is written beside, as before.

The same :func:`record_evaluation` serves the local (same-user) path and the evaluator service.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from quaere.evaluate.options import EvalOptions
from quaere.evaluate.run import Progress
from quaere.evaluate.source_file import unlinked
from quaere.records import Evaluation
from quaere.store.classify import classify
from quaere.store.pinning import check_workspace, identity_of, pinned_task
from quaere.store.records import EvaluationEntry, Registration, Starter
from quaere.store.store import Store
from quaere.task.loader import Task, load_task
from quaere.workspace import Workspace

Evaluate = Callable[[Task, Path, EvalOptions, "Progress | None"], Evaluation]  # run_evaluation's signature


@dataclass(frozen=True)
class EvalRequest:
    """What ``quaere eval`` was asked (None: not given)."""

    candidate: Path | None = None
    task: str | None = None
    scenarios_file: Path | None = None
    seed: int | None = None
    benchmark: bool = True
    no_device: bool = False

    def options(self, cache_dir: Path | None = None) -> EvalOptions:
        return EvalOptions(
            seed=self.seed,
            scenarios_file=self.scenarios_file,
            benchmark=self.benchmark,
            no_device=self.no_device,
            cache_dir=cache_dir,
        )


def record_evaluation(
    store: Store,
    registration: Registration,
    task: Task,
    candidate: Path,
    options: EvalOptions,
    started_by: Starter,
    evaluate: Evaluate,
    progress: Progress | None = None,
) -> EvaluationEntry:
    """Run ``evaluate`` and sign its evaluation into ``store``: full only on the pinned task with full options,
    and only when nothing of it was lost with a pool's judge."""
    identity = identity_of(task)
    pinned = identity.sha256 == registration.task.sha256
    identity = registration.task if pinned else identity  # the store's copy is named as it was pinned
    # The keys are never a runner's to read, wherever the store lies (a service's is under /var/lib, a read root).
    options = options.model_copy(update={"unreadable": (*options.unreadable, store.keys_dir)})
    evaluation = evaluate(task, candidate, options, progress)
    kind, reasons = classify(options, pinned, evaluation)
    return store.append(
        registration.workspace_id,
        lambda sequence: EvaluationEntry(
            sequence=sequence,
            workspace_id=registration.workspace_id,
            kind=kind,
            partial=reasons,
            started_by=started_by,
            trust_mode=store.trust_mode,
            task=identity,
            evaluation=evaluation,
        ),
    )


def task_for_request(store: Store, registration: Registration, name: str | None, shadow_dirs: Sequence[Path]) -> Task:
    """The pinned task's store copy, unless ``--task`` names another task (by content)."""
    pinned = pinned_task(store, registration)
    if name is None:
        return pinned
    other = load_task(name, shadow_dirs)
    return pinned if identity_of(other).sha256 == registration.task.sha256 else other


def evaluate_in_workspace(
    store: Store,
    workspace: Workspace,
    request: EvalRequest,
    evaluate: Evaluate,
    cwd: Path,
    progress: Progress | None = None,
) -> EvaluationEntry:
    """The local (same-user) ``quaere eval`` in a workspace: refuse a disagreeing workspace by name,
    evaluate, sign into the store, then write the workspace's convenience copies.

    Raises :class:`~quaere.store.StoreError` or :class:`~quaere.task.spec.TaskError` naming the file.
    """
    registration = store.registration(workspace.id)
    shadow_dirs = (workspace.root, cwd)
    check_workspace(store, workspace, registration, shadow_dirs)
    task = task_for_request(store, registration, request.task, shadow_dirs)
    # Its own name, not what a link leads to: a kernel.cpp linked to blob.o was built as blob.o (linked, unaudited);
    # run_evaluation refuses a link, saying so.
    candidate = unlinked(request.candidate or workspace.candidate)
    entry = record_evaluation(store, registration, task, candidate, request.options(), Starter.CALLER, evaluate,
                              progress)
    keep_workspace_copies(workspace, entry, candidate, task)
    return entry


def keep_workspace_copies(workspace: Workspace, entry: EvaluationEntry, candidate: Path, task: Task) -> None:
    """The untrusted conveniences: the ledger copy, the candidate kept by hash, a summary in the trace."""
    from quaere.evaluate.ledger import append_evaluation
    from quaere.evaluate.summary import to_trace_event
    from quaere.trace import TraceWriter, current_session, read_trace

    append_evaluation(workspace.ledger, entry.evaluation)
    if candidate.is_file():
        workspace.keep_version(candidate)
    session = current_session(read_trace(workspace.trace).events)
    event = to_trace_event(entry.evaluation, task.spec).model_copy(update={"session": session})
    TraceWriter(workspace.trace).write(event)


@dataclass(frozen=True)
class LocalConfirmer:
    """The goal's confirming evaluation, run here (same-user mode): a full evaluation of the workspace's
    candidate on the pinned task with a fresh seed, started by quaere, signed into the store."""

    store: Store
    workspace: Workspace
    evaluate: Evaluate
    progress: Progress | None = None
    """Told how the confirming evaluation goes (a bar on a terminal); None: silent, as in the Stop hook."""

    def confirm(self, candidate_hash: str) -> None:
        from quaere.workspace import content_hash

        registration = self.store.registration(self.workspace.id)
        candidate = unlinked(self.workspace.candidate)
        if content_hash(candidate) != candidate_hash:
            return  # the file changed since the goal was read: the next check judges the new version
        task = pinned_task(self.store, registration)
        entry = record_evaluation(
            self.store, registration, task, candidate, EvalOptions(), Starter.CONFIRMATION, self.evaluate,
            self.progress,
        )
        keep_workspace_copies(self.workspace, entry, candidate, task)


def evaluate_outside_workspace(
    request: EvalRequest, cwd: Path, default_task: str, evaluate: Evaluate, progress: Progress | None = None
) -> tuple[Evaluation, Path]:
    """``quaere eval`` outside a workspace: no goal, nothing signed; the evaluation is appended to
    ``<cwd>/.quaere/ledger.jsonl`` as a plain record. Returns it and that path."""
    from quaere.evaluate.ledger import append_evaluation
    from quaere.workspace import STATE_DIR

    task = load_task(request.task or default_task, (cwd,))
    candidate = unlinked(request.candidate or task.initial_kernel)
    evaluation = evaluate(task, candidate, request.options(), progress)
    ledger = cwd / STATE_DIR / "ledger.jsonl"
    append_evaluation(ledger, evaluation)
    return evaluation, ledger


def describe_entry(entry: EvaluationEntry, store: Store) -> str:
    """One line under the evaluation's table: how it counts, where it is, and the mode in force."""
    from quaere.store.modes import mode_line

    if entry.full:
        counted = "full evaluation: counts for the goal"
    else:
        reasons = ", ".join(r.value for r in entry.partial)
        counted = f"PARTIAL evaluation ({reasons}): shown, never counted for the goal"
    return f"{counted}; signed into {store.records_path(entry.workspace_id)} (line {entry.sequence})\n" + mode_line(
        entry.trust_mode
    )
