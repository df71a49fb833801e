"""The real evaluator behind :class:`quaere.report.verify.BundleEvaluator` (imported only when verifying)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from quaere.records import Evaluation

if TYPE_CHECKING:
    from quaere.evaluate.run import Progress


class QuaereEvaluator:
    """Runs :func:`quaere.evaluate.run_evaluation` on a bundle's kernel with the bundle's own task folder.

    Builds go to the scratch folder verify hands over, so nothing cached on this machine is reused.
    ``progress`` is told how the evaluation goes (a bar on a terminal).
    """

    def __init__(self, progress: Progress | None = None) -> None:
        self.progress = progress

    def device_present(self) -> bool:
        from quaere.evaluate.device import gpu_present

        return gpu_present()

    def evaluate(self, task_folder: Path, kernel: Path, workdir: Path) -> Evaluation:
        from quaere.evaluate import EvalOptions, run_evaluation
        from quaere.task.loader import load_task

        task = load_task(str(task_folder))
        return run_evaluation(task, kernel, EvalOptions(cache_dir=workdir / "cache"), self.progress)
