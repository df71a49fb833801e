"""``quaere task new DIR --from KERNEL``: plan the task, write task.toml and task.py (and a copy of the
kernel when it lies outside DIR) into a staging folder, call the reference where the plan is complete,
and only then move the files into DIR, so that a bad input leaves nothing half-written.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from quaere.records import Scenario
from quaere.task import kit, kit_arrays
from quaere.task.csig import read_signature
from quaere.task.kit import Buffer
from quaere.task.scaffold import Answers, ScaffoldError, TaskPlan, kernel_device, parse_reference, plan_task
from quaere.task.scaffold_text import SCENARIO_BUDGET, render_py, render_toml
from quaere.task.todos import Todo, find_todos

TASK_FILES = ("task.toml", "task.py")


@dataclass(frozen=True)
class NewTask:
    """What ``create_task`` wrote and what is left to do."""

    folder: Path
    written: tuple[Path, ...]
    todos: tuple[Todo, ...]
    reference_note: str
    """How the reference fared when called on small scenarios, or why it was not called."""


def _buffers(plan: TaskPlan) -> dict[str, Buffer]:
    return {b.name: Buffer(b.role, b.dtype, tuple(b.shape)) for b in plan.buffers}  # type: ignore[arg-type]


def _device_here(device: str) -> str:
    """Why the reference cannot be called on this machine ('' when it can)."""
    if device == "cpu":
        return ""
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed here"
    import torch

    return "" if torch.cuda.is_available() else "no CUDA device here"


def try_reference(plan: TaskPlan) -> str:
    """Call the reference at both precisions on two small scenarios; raises ReferenceFailed (a
    :class:`~quaere.task.spec.TaskError`) naming its file, function and output when it misbehaves."""
    if not plan.complete or plan.reference_spec is None:
        return "reference not called yet: places are left to fill (quaere task check calls it)"
    why = _device_here(plan.device)
    if why:
        return f"reference not called: {why} (quaere task check calls it on the GPU)"
    buffers = _buffers(plan)
    function = kit_arrays.load_function(str(plan.reference_spec.file), plan.reference_spec.file.name,
                                        plan.reference_spec.function)
    budget = SCENARIO_BUDGET[plan.device][0]
    scenarios = kit.covering_scenarios(plan.axes, lambda params: kit.buffer_bytes(buffers, params), budget)
    # Two small scenarios whose axes differ most (a transposed output shows only where rows != cols).
    def order(scenario: Scenario) -> tuple[bool, int, int]:
        nbytes = kit.buffer_bytes(buffers, scenario.params)
        return nbytes > 1 << 16, -len(set(map(str, scenario.params.values()))), nbytes

    small = sorted(scenarios, key=order)[:2]
    for scenario in small:
        inputs = kit_arrays.draw_inputs(buffers, Scenario(id=scenario.id, params=scenario.params), 1, plan.device)
        for precision in ("low", "fp32"):
            kit_arrays.call_reference(function, buffers, scenario, inputs, precision, plan.high_dtype())
    return f"reference called on {', '.join(s.id for s in small)} at both precisions: outputs as declared"


def _stage(folder: Path) -> Path:
    if folder.exists():
        if not folder.is_dir():
            raise ScaffoldError(f"{folder}: exists and is not a folder; expected a new or existing task folder")
        taken = [name for name in TASK_FILES if (folder / name).exists()]
        if taken:
            raise ScaffoldError(f"{folder / taken[0]}: exists; expected a folder without a task (nothing was written)")
        return Path(tempfile.mkdtemp(prefix=".quaere-new-", dir=folder))
    folder.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{folder.name}.new-", dir=folder.parent))


def _publish(stage: Path, folder: Path) -> tuple[Path, ...]:
    """Move the staged files into ``folder`` (the whole stage when the folder is new); task.toml last, so
    a folder with a task.toml holds the whole task."""
    names = sorted((p.name for p in stage.iterdir()), key=lambda n: n == "task.toml")
    if not folder.exists():
        os.rename(stage, folder)
    else:
        for name in names:
            os.rename(stage / name, folder / name)
        stage.rmdir()
    return tuple(folder / name for name in names)


def create_task(folder: Path, kernel: Path, entry: str | None, reference: str | None, answers: Answers) -> NewTask:
    """Write a task for ``kernel`` into ``folder``; raises :class:`ScaffoldError` or another TaskError (one
    line naming the file, the parameter and the expectation) with nothing written."""
    kernel_device(kernel)
    signature = read_signature(kernel, entry)
    spec = parse_reference(reference) if reference else None
    plan = plan_task(folder, kernel, signature, spec, answers)
    task_py = render_py(plan)
    compile(task_py, str(folder / "task.py"), "exec")  # a template bug shows here, not in the user's hands
    note = try_reference(plan)
    stage = _stage(folder)
    try:
        (stage / "task.toml").write_text(render_toml(plan))
        (stage / "task.py").write_text(task_py)
        if not kernel.resolve().is_relative_to(folder.resolve()):
            shutil.copyfile(kernel, stage / plan.kernel_name)
        written = _publish(stage, folder)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return NewTask(folder=folder, written=written, todos=find_todos(task_py), reference_note=note)
