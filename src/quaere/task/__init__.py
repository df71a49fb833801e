"""Task folders: ``task.toml`` (schema in :mod:`quaere.task.spec`) and a module (:mod:`quaere.task.contract`)."""

from quaere.task.loader import Task, load_task, shipped_task_names
from quaere.task.spec import TaskError, TaskSpec

__all__ = ["Task", "TaskError", "TaskSpec", "load_task", "shipped_task_names"]
