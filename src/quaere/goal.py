"""The goal: a predicate over the full evaluations of the current candidate, checked per scenario.

Only entries of the signed store count, and of those only *full* evaluations (the pinned task's own
scenarios, a seed the evaluator drew, every benchmark timed) of the pinned task and of the current
file's content hash. Partial runs are shown, never counted. Every full evaluation of this version is
pooled: a lucky run does not replace an unlucky one, so re-running an unchanged kernel converges to its
true speed instead of drawing until one run looks fast.

MET needs, on the pooled runs and again on a confirming evaluation that quaere itself starts:

* every correctness scenario passed (in every full run: a kernel that fails once is wrong);
* every benchmark configuration a goal target matches has ``median ratio / (1 + MARGIN_K * error) >=
  target``, where ``error`` is the ratio's relative standard error measured in each run (median over the
  runs): the candidate's time raised and the baseline's lowered by MARGIN_K standard errors;
* nothing ran faster than the roofline floor, and every baseline was timed.

When everything holds but no confirmation has, the state is ``UNCONFIRMED``: the caller (the Stop hook,
``quaere goal --confirm``, ``quaere run``) starts one. Only the first ``MAX_CONFIRMATIONS`` confirmations
of a version count (in store order); when none of them held the version is UNMET, whatever comes after.
Never an average across scenarios, never a model's opinion. Text rendering is in :mod:`quaere.goal_render`.
"""
from __future__ import annotations

from collections.abc import Sequence

from quaere.goal_judging import (
    NOTHING_MEASURED,
    judge_benchmarks,
    judge_configuration,
    judge_correctness,
    judge_runs,
    not_run_reason,
    ratio_error,
)
from quaere.goal_records import (
    MARGIN_K,
    MAX_CONFIRMATIONS,
    SE_PER_IQR,
    Expected,
    FailingBenchmark,
    FailingScenario,
    GoalState,
    GoalStatus,
    PartialRun,
    Shortfall,
    Verdicts,
    is_timing_only,
    lower_bound,
)
from quaere.store.records import EvaluationEntry, Starter
from quaere.task.spec import TaskSpec

__all__ = [  # the goal's public names, wherever they are defined
    "MARGIN_K", "MAX_CONFIRMATIONS", "NOTHING_MEASURED", "SE_PER_IQR", "Expected", "FailingBenchmark",
    "FailingScenario", "GoalState", "GoalStatus", "PartialRun", "Shortfall", "Verdicts", "check_goal",
    "is_timing_only", "judge_benchmarks", "judge_configuration", "judge_correctness", "judge_runs",
    "lower_bound", "not_run_reason", "ratio_error",
]


def _counted(entry: EvaluationEntry, candidate_hash: str, pinned_sha256: str) -> bool:
    return entry.full and entry.task.sha256 == pinned_sha256 and entry.evaluation.candidate_hash == candidate_hash


def _empty_status(entries: Sequence[EvaluationEntry], candidate_hash: str) -> GoalStatus:
    """No full evaluation of this version: never evaluated, changed since, or only partial runs."""
    mine = [e for e in entries if e.evaluation.candidate_hash == candidate_hash]
    if not entries:
        return GoalStatus(state=GoalState.NO_EVALUATION, candidate_hash=candidate_hash)
    if not mine:  # other versions were evaluated, this file never: its verdict cannot be borrowed
        latest = entries[-1].evaluation
        return GoalStatus(state=GoalState.STALE, candidate_hash=candidate_hash,
                          evaluated_hash=latest.candidate_hash, evaluated_at=latest.created_at)
    return GoalStatus(
        state=GoalState.UNMET, candidate_hash=candidate_hash, evaluated_hash=candidate_hash,
        evaluated_at=mine[-1].evaluation.created_at,
        problems=("no full evaluation of this version on the pinned task: partial runs never count; "
                  "run `quaere eval` without --scenarios, --seed, --no-benchmark or --task",),
        partial_runs=tuple(PartialRun(created_at=e.evaluation.created_at, reasons=e.partial) for e in mine),
    )


def _confirmations(
    spec: TaskSpec, counted: Sequence[EvaluationEntry], expected: Expected
) -> tuple[list[Verdicts], tuple[str, ...]]:
    """Each counted confirmation judged alone: only the first ``MAX_CONFIRMATIONS`` in store order, so that no
    number of later ones can turn the cap's UNMET into MET; the ignored ones are named in a problem line."""
    confirming = [e for e in counted if e.started_by is Starter.CONFIRMATION]
    judged = [judge_runs(spec, [e.evaluation], expected) for e in confirming[:MAX_CONFIRMATIONS]]
    extra = confirming[MAX_CONFIRMATIONS:]
    if not extra:
        return judged, ()
    lines = ", ".join(str(e.sequence) for e in extra)
    return judged, (
        f"{len(extra)} confirming evaluation(s) beyond the first {MAX_CONFIRMATIONS} ignored (store lines "
        f"{lines}): only the first {MAX_CONFIRMATIONS} of a version count",
    )


def _state(pooled: Verdicts, confirmations: Sequence[Verdicts]) -> tuple[GoalState, tuple[str, ...]]:
    """The state from the pooled runs and the counted confirmations (at most ``MAX_CONFIRMATIONS``)."""
    if not pooled.holds:
        return GoalState.UNMET, ()
    if any(c.holds for c in confirmations):
        return GoalState.MET, ()
    if len(confirmations) >= MAX_CONFIRMATIONS:
        return GoalState.UNMET, (
            f"{len(confirmations)} confirming evaluations of this version did not hold: its speed is not "
            "reproducible; change the kernel",
        )
    return GoalState.UNCONFIRMED, ()


def check_goal(
    spec: TaskSpec,
    entries: Sequence[EvaluationEntry],
    candidate_hash: str,
    pinned_sha256: str,
    expected: Expected = Expected(),
    store_problems: Sequence[str] = (),
) -> GoalStatus:
    """Judge the goal of ``spec`` for the file whose content hash is ``candidate_hash`` (pure).

    ``entries`` are the verified store entries in order; ``pinned_sha256`` the task pinned at init.
    ``store_problems`` (tampered lines) withhold MET: a store with holes cannot be judged.
    """
    counted = [e for e in entries if _counted(e, candidate_hash, pinned_sha256)]
    if not counted:
        return _empty_status(entries, candidate_hash)
    runs = [e.evaluation for e in counted]
    pooled = judge_runs(spec, runs, expected)
    confirmations, ignored = _confirmations(spec, counted, expected)
    state, more = _state(pooled, confirmations)
    problems = (*pooled.problems, *ignored, *more, *(f"store: {p}" for p in store_problems))
    if store_problems and state in (GoalState.MET, GoalState.UNCONFIRMED):
        state = GoalState.UNMET
    latest_full = counted[-1].evaluation.created_at
    partial = [e for e in entries if e.evaluation.candidate_hash == candidate_hash and not e.full
               and e.evaluation.created_at >= latest_full]
    return GoalStatus(
        state=state,
        candidate_hash=candidate_hash,
        evaluated_hash=candidate_hash,
        evaluated_at=latest_full,
        full_runs=len(runs),
        confirmations=len(confirmations),
        problems=problems,
        failing_scenarios=pooled.failing_scenarios,
        failing_benchmarks=pooled.failing_benchmarks,
        confirmation_misses=(
            confirmations[-1].failing_benchmarks if confirmations and state is not GoalState.MET else ()
        ),
        partial_runs=tuple(PartialRun(created_at=e.evaluation.created_at, reasons=e.partial) for e in partial),
        scenarios_checked=max((len(r.correctness) for r in runs), default=0),
        benchmarks_checked=pooled.benchmarks_checked,
    )
