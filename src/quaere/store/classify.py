"""Which evaluations count for the goal: a full run is the pinned task's own scenarios, with a seed the
evaluator drew, every benchmark configuration timed. Anything else is partial, with its reasons."""

from __future__ import annotations

from quaere.evaluate.options import EvalOptions
from quaere.records import Evaluation
from quaere.store.records import PartialReason, RunKind


def partial_reasons(options: EvalOptions, pinned_task: bool, evaluation: Evaluation | None = None
                    ) -> tuple[PartialReason, ...]:
    """Every way ``options`` (on the pinned task or not) departs from a full evaluation, and the
    ``evaluation`` run with them: one the pool could not finish is never complete."""
    checks = (
        (options.scenarios_file is not None, PartialReason.SCENARIOS_FILE),
        (options.seed is not None, PartialReason.FIXED_SEED),
        (not options.benchmark, PartialReason.NO_BENCHMARK),
        (options.benchmark and options.benchmark_ids is not None, PartialReason.SUBSET_TIMED),
        (not options.correctness, PartialReason.NO_CORRECTNESS),
        (options.no_device, PartialReason.NO_DEVICE),
        (not pinned_task, PartialReason.OTHER_TASK),
        (evaluation is not None and evaluation.lost, PartialReason.RUNNER_LOST),
    )
    return tuple(reason for failed, reason in checks if failed)


def classify(options: EvalOptions, pinned_task: bool, evaluation: Evaluation | None = None
             ) -> tuple[RunKind, tuple[PartialReason, ...]]:
    """(FULL, ()) or (PARTIAL, reasons)."""
    reasons = partial_reasons(options, pinned_task, evaluation)
    return (RunKind.PARTIAL if reasons else RunKind.FULL), reasons
