"""Finding and loading task folders: shipped ones by name, or any folder by path."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from quaere.task.contract import REQUIRED_FUNCTIONS, TaskModule
from quaere.task.spec import TaskError, TaskSpec, parse_task_toml

SHIPPED_TASKS_DIR = Path(__file__).parent / "tasks"


@dataclass(frozen=True)
class Task:
    """A validated task: its spec, its folder and its imported module."""

    spec: TaskSpec
    folder: Path
    module: TaskModule

    @property
    def initial_kernel(self) -> Path:
        return self.folder / self.spec.initial_kernel


def shipped_task_names() -> list[str]:
    return sorted(p.parent.name for p in SHIPPED_TASKS_DIR.glob("*/task.toml"))


def is_explicit_path(name_or_path: str) -> bool:
    """A path the user spelled as one (``./x``, ``../x``, ``a/b``, ``/abs``, ``~/x``), not a bare name."""
    return "/" in name_or_path or name_or_path.startswith((".", "~")) or os.sep in name_or_path


def resolve_task_folder(name_or_path: str, shadow_dirs: Sequence[Path] = ()) -> Path:
    """A shipped task's name, or an explicit path to a folder holding task.toml.

    A bare name means the shipped task only: a folder of that name in one of ``shadow_dirs`` (the
    workspace, the current folder) is refused by name rather than silently preferred or ignored, so an
    agent cannot swap the task by creating ``./cpu_softmax/``. A task folder of one's own is named by a
    path (``./mytask``).
    """
    if is_explicit_path(name_or_path):
        folder = Path(name_or_path).expanduser()
        if not (folder / "task.toml").exists():
            raise TaskError(f"{folder}: no task.toml in this folder (expected a task folder)")
        return folder.resolve()
    shipped = SHIPPED_TASKS_DIR / name_or_path
    for base in shadow_dirs:
        if (base / name_or_path / "task.toml").exists():
            raise TaskError(
                f"{base / name_or_path}: this folder shadows the shipped task '{name_or_path}'; a bare name means "
                f"the shipped task only: rename the folder, or name it as a path (./{name_or_path}) to use it"
            )
    if (shipped / "task.toml").exists():
        return shipped
    hint = f"; for the folder here, write ./{name_or_path}" if Path(name_or_path, "task.toml").exists() else ""
    raise TaskError(f"task '{name_or_path}': not a shipped task (shipped tasks are {shipped_task_names()}){hint}")


def _import_module(path: Path, task_name: str) -> ModuleType:
    if not path.exists():
        raise TaskError(f"{path}: no such file (named by field 'module' of task.toml)")
    module_name = f"quaere_task_{task_name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise TaskError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: report it with its name rather than a traceback
        raise TaskError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from exc
    missing = [name for name in REQUIRED_FUNCTIONS if not callable(getattr(module, name, None))]
    if missing:
        raise TaskError(f"{path}: missing required function(s) {missing} (see quaere.task.contract.TaskModule)")
    return module


def load_task(name_or_path: str, shadow_dirs: Sequence[Path] = ()) -> Task:
    """Load and validate a task; raise :class:`TaskError` with file, field and expectation.

    ``shadow_dirs``: see :func:`resolve_task_folder`.
    """
    folder = resolve_task_folder(name_or_path, shadow_dirs)
    spec = parse_task_toml(folder / "task.toml")
    kernel = folder / spec.initial_kernel
    if not kernel.exists():
        raise TaskError(f"{folder / 'task.toml'}: field 'initial_kernel' names {kernel.name}, which does not exist")
    module = _import_module(folder / spec.module, spec.name)
    return Task(spec=spec, folder=folder, module=module)  # type: ignore[arg-type]
