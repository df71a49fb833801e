"""The task pinned at `quaere init`, and the refusals that protect it.

The registration in the store (not ``workspace.toml``, which the agent can edit) holds the task's name and
content hash; the evaluator runs the store's own copy of it, after checking that copy's hash. Every
disagreement is refused with the file that disagrees: a ``workspace.toml`` that names another task or
candidate, a task folder changed since it was pinned, a store copy that was edited.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from quaere.hooks.state import HookBudget
from quaere.store.identity import first_difference, task_digest, task_identity
from quaere.store.records import Registration, TaskIdentity
from quaere.store.store import Store, StoreError
from quaere.task.loader import SHIPPED_TASKS_DIR, Task, is_explicit_path, load_task, resolve_task_folder
from quaere.task.spec import TaskError
from quaere.workspace import Workspace


def task_reference(task: Task) -> str:
    """How a registration names a task: a shipped task by name, any other folder by absolute path."""
    return task.spec.name if task.folder.parent == SHIPPED_TASKS_DIR else str(task.folder.resolve())


def identity_of(task: Task) -> TaskIdentity:
    return task_identity(task.spec.name, task_reference(task), task.folder)


def register_workspace(
    store: Store, workspace: Workspace, task: Task, budget: HookBudget | None = None, replace: bool = False
) -> Registration:
    """Pin ``task`` (and the candidate's file name, and the Stop hook's budget) for ``workspace``."""
    registration = Registration(
        workspace_id=workspace.id,
        workspace_root=str(workspace.root.resolve()),
        task=identity_of(task),
        candidate_name=workspace.candidate_name,
        budget=budget or HookBudget(),
        trust_mode=store.trust_mode,
        created_at=time.time(),
    )
    return store.register(registration, task.folder, replace=replace)


def pinned_task(store: Store, registration: Registration) -> Task:
    """The store's copy of the pinned task, loaded after its hash is checked against the registration."""
    copy = store.task_copy(registration.workspace_id)
    if not (copy / "task.toml").exists():
        raise StoreError(f"{copy}: the store's copy of task '{registration.task.name}' is missing")
    sha256, _ = task_digest(copy)
    if sha256 != registration.task.sha256:
        changed = _changed_file(copy, registration.task)
        raise StoreError(
            f"{copy / changed}: the store's copy of task '{registration.task.name}' was changed after it was "
            f"pinned (sha256 {registration.task.sha256[:12]}, now {sha256[:12]}): tampered"
        )
    try:
        return load_task(str(copy.resolve()))
    except TaskError as exc:
        raise StoreError(f"the pinned task does not load: {exc}") from None


def _changed_file(copy: Path, pinned: TaskIdentity) -> str:
    """The file to name when a copy no longer matches: against the original when it still matches its pin."""
    try:
        original = resolve_task_folder(pinned.reference)
    except TaskError:
        return ""
    if task_digest(original)[0] == pinned.sha256:
        return first_difference(original, copy)
    return ""


def check_workspace(
    store: Store, workspace: Workspace, registration: Registration, shadow_dirs: Sequence[Path] = ()
) -> None:
    """Refuse, naming the file, a workspace whose ``workspace.toml`` or task disagrees with what was pinned.

    ``shadow_dirs`` are the folders where a folder named like a shipped task is refused (see
    :func:`quaere.task.loader.resolve_task_folder`).
    """
    config = workspace.config
    if workspace.candidate_name != registration.candidate_name:
        raise StoreError(
            f"{config}: field 'candidate' names '{workspace.candidate_name}', but this workspace was registered "
            f"with candidate '{registration.candidate_name}' at `quaere init`"
        )
    pinned = registration.task
    try:
        folder = resolve_task_folder(workspace.task, shadow_dirs)
    except TaskError as exc:
        raise StoreError(f"{config}: field 'task': {exc}") from None
    same_place = workspace.task == pinned.reference or folder == Path(pinned.reference).resolve()
    if not same_place:
        raise StoreError(
            f"{config}: field 'task' names '{workspace.task}', but this workspace was registered with task "
            f"'{pinned.reference}' (sha256 {pinned.sha256[:12]}) at `quaere init`; the goal judges only that task"
        )
    sha256, _ = task_digest(folder)
    if sha256 != pinned.sha256:
        copy = store.task_copy(registration.workspace_id)
        changed = first_difference(copy, folder) if copy.is_dir() else ""
        where = folder / changed if changed else folder
        raise StoreError(
            f"{where}: task '{pinned.name}' changed since it was pinned at `quaere init` (sha256 "
            f"{pinned.sha256[:12]}, now {sha256[:12]}); the evaluator keeps judging the pinned version"
        )



def init_workspace(
    store: Store, directory: Path, task_name: str, force: bool, cwd: Path, budget: HookBudget | None = None
) -> tuple[Workspace, Registration]:
    """``quaere init``: make ``directory`` a workspace of the task and pin the task in the store.

    ``force`` overwrites the workspace's candidate and re-pins another task (a new goal: earlier full
    evaluations of the old task no longer count).
    """
    from quaere.workspace import WorkspaceError, create_workspace

    store.signer()  # a user who cannot sign into this store is refused before anything is written
    if is_explicit_path(task_name) and not Path(task_name).expanduser().is_absolute():
        task_name = str(cwd / task_name)  # a relative path names a folder from where the command runs
    task = load_task(task_name, (cwd, directory))
    existing = _unregistered_workspace(store, directory, task) if not force else None
    try:
        workspace = existing or create_workspace(directory, task_reference(task), task.initial_kernel, overwrite=force)
    except WorkspaceError as exc:
        raise StoreError(str(exc)) from None
    return workspace, register_workspace(store, workspace, task, budget, replace=force)


def _unregistered_workspace(store: Store, directory: Path, task: Task) -> Workspace | None:
    """A workspace made before the store existed (or whose store was lost), of this very task: registered
    as it is, its candidate untouched. None when there is no workspace there or it is registered."""
    from quaere.workspace import WorkspaceError, open_workspace

    if not (directory / ".quaere" / "workspace.toml").exists():
        return None
    try:
        workspace = open_workspace(directory)
    except WorkspaceError:
        return None
    if store.registration_path(workspace.id).exists() or workspace.task != task_reference(task):
        return None  # create_workspace refuses it, naming the file
    return workspace
