"""The real evaluator behind :class:`quaere.report.verify.BundleEvaluator` (imported only when verifying)."""

from __future__ import annotations

from pathlib import Path

from quaere.records import Evaluation


class EvaluatorUnavailable(RuntimeError):
    """This installation has no evaluator (``quaere.evaluate.run_evaluation`` cannot be imported)."""


class QuaereEvaluator:
    """Runs ``quaere.evaluate.run_evaluation`` on a bundle's kernel in a scratch workspace."""

    def device_present(self) -> bool:
        import shutil

        return shutil.which("nvidia-smi") is not None

    def evaluate(self, task_folder: Path, kernel: Path, workdir: Path) -> Evaluation:
        try:
            from quaere.evaluate import run_evaluation  # noqa: F401
        except ImportError as exc:
            raise EvaluatorUnavailable(f"the evaluator is not installed here: {exc}") from None
        raise EvaluatorUnavailable("the evaluator's entry point is not wired to verify yet")
