"""Small builders of real records for the hooks tests (evaluations as the evaluator writes them)."""

from __future__ import annotations

import math

from quaere.records import (
    BenchmarkResult,
    BuildResult,
    BuildStatus,
    DeviceInfo,
    Evaluation,
    ScenarioVerdict,
    Timing,
    TimingStatus,
    Verdict,
)
from quaere.task.spec import TaskSpec

SPEC_DATA = {
    "name": "toy",
    "description": "a toy task",
    "device": "cpu",
    "target": "x86-64",
    "initial_kernel": "k.c",
    "entry_point": "k",
    "build": "cc {source} -o {output}",
    "roofline": {"matrix_tflops": 1.0, "bandwidth_gbps": 10.0},
    "comparisons": [{"name": "ref"}],
    "goal": {"targets": [{"baseline": "initial", "ratio": 1.5}]},
}


def spec(**goal) -> TaskSpec:
    data = dict(SPEC_DATA)
    if goal:
        data["goal"] = goal
    return TaskSpec.model_validate(data)


def timing(impl: str, median_ms: float, spread_ms: float = 0.0, status=TimingStatus.MEASURED, detail="") -> Timing:
    if status is not TimingStatus.MEASURED:
        return Timing(impl=impl, status=status, detail=detail)
    return Timing(impl=impl, status=status, samples_ms=(median_ms,), median_ms=median_ms, spread_ms=spread_ms)


def bench(
    scenario_id: str,
    candidate_ms: float,
    initial_ms: float,
    spread_ms: float = 0.0,
    *extra: Timing,
    suspect: bool = False,
) -> BenchmarkResult:
    timings = (timing("candidate", candidate_ms, spread_ms), timing("initial", initial_ms, spread_ms), *extra)
    return BenchmarkResult(scenario_id=scenario_id, flops=1e6, bound_ms=0.001, timings=timings, suspect=suspect)


def evaluation(
    candidate_hash: str, verdicts=(("c1", Verdict.PASSED),), benchmarks=(), *, ran=True, built=True, created_at=1_000.0
) -> Evaluation:
    build = BuildResult(
        status=BuildStatus.OK if built else BuildStatus.BUILD_FAILED,
        command="cc",
        artifact="k.so" if built else "",
        log_tail="" if built else "k.c:3: error: expected ';'",
        included_headers=(),
        duration_s=0.1,
    )
    return Evaluation(
        task="toy",
        candidate_path="k.c",
        candidate_hash=candidate_hash,
        created_at=created_at,
        device=DeviceInfo(name="cpu:test"),
        ran=ran,
        build=build,
        correctness=tuple(
            ScenarioVerdict(scenario_id=i, verdict=v, seed=1, detail="" if v is Verdict.PASSED else f"{i} is off")
            for i, v in verdicts
        )
        if ran
        else (),
        benchmarks=tuple(benchmarks),
    )


NAN = math.nan


PINNED = "p" * 64  # the pinned task's sha256 in these tests


def entry(
    evaluation: Evaluation,
    *,
    partial=(),
    started_by=None,
    task_sha256: str = PINNED,
    sequence: int = 1,
    workspace_id: str = "ws",
):
    """A store entry as the recorder writes it: full unless ``partial`` reasons are given."""
    from quaere.store.records import EvaluationEntry, RunKind, Starter, TaskIdentity, TrustMode

    return EvaluationEntry(
        sequence=sequence,
        workspace_id=workspace_id,
        kind=RunKind.PARTIAL if partial else RunKind.FULL,
        partial=tuple(partial),
        started_by=started_by or Starter.CALLER,
        trust_mode=TrustMode.SAME_USER,
        task=TaskIdentity(name="toy", reference="toy", sha256=task_sha256, files=1),
        evaluation=evaluation,
    )


def confirmed(evaluation: Evaluation, **kw):
    from quaere.store.records import Starter

    return entry(evaluation, started_by=Starter.CONFIRMATION, **kw)
