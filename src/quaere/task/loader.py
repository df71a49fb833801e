"""Finding and loading task folders: shipped ones by name, or any folder by path."""

from __future__ import annotations

import importlib.util
import sys
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


def resolve_task_folder(name_or_path: str) -> Path:
    """A shipped task's name, or a path to a folder holding task.toml."""
    candidate = Path(name_or_path)
    if (candidate / "task.toml").exists():
        return candidate.resolve()
    shipped = SHIPPED_TASKS_DIR / name_or_path
    if (shipped / "task.toml").exists():
        return shipped
    raise TaskError(
        f"task '{name_or_path}': neither a folder with a task.toml nor a shipped task; "
        f"shipped tasks are {shipped_task_names()}"
    )


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


def load_task(name_or_path: str) -> Task:
    """Load and validate a task; raise :class:`TaskError` with file, field and expectation."""
    folder = resolve_task_folder(name_or_path)
    spec = parse_task_toml(folder / "task.toml")
    kernel = folder / spec.initial_kernel
    if not kernel.exists():
        raise TaskError(f"{folder / 'task.toml'}: field 'initial_kernel' names {kernel.name}, which does not exist")
    module = _import_module(folder / spec.module, spec.name)
    return Task(spec=spec, folder=folder, module=module)  # type: ignore[arg-type]
