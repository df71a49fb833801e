"""Small records for the methods' unit tests (no evaluator run)."""

from __future__ import annotations

from quaere.records import (
    AuditFinding,
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


def evaluation(
    digest: str,
    at: float,
    verdicts: tuple[Verdict, ...] = (Verdict.PASSED,),
    built: bool = True,
    audit: tuple[str, ...] = (),
    medians: dict[str, tuple[float, float]] | None = None,
) -> Evaluation:
    """An evaluation of ``digest`` at time ``at``; ``medians``: scenario -> (candidate ms, initial ms)."""
    build = BuildResult(status=BuildStatus.OK if built else BuildStatus.BUILD_FAILED, command="c++",
                        artifact="k.so" if built else "", log_tail="", included_headers=(), duration_s=0.1)
    benchmarks = tuple(
        BenchmarkResult(scenario_id=sid, flops=4e9, bound_ms=2.0, timings=(
            Timing(impl="candidate", status=TimingStatus.MEASURED, median_ms=mine),
            Timing(impl="initial", status=TimingStatus.MEASURED, median_ms=initial),
        ))
        for sid, (mine, initial) in (medians or {}).items()
    )
    return Evaluation(
        task="toy", candidate_path="kernel.cpp", candidate_hash=digest, created_at=at, device=DeviceInfo(name="cpu:t"),
        ran=built, build=build,
        audit=tuple(AuditFinding(rule=r, rationale="why", evidence="seen") for r in audit),
        correctness=tuple(ScenarioVerdict(scenario_id=f"c{i}", verdict=v, seed=1) for i, v in enumerate(verdicts))
        if built else (),
        benchmarks=benchmarks,
    )
