"""``run_evaluation``: build -> audit -> correctness -> timing, one :class:`Evaluation` out.

The parent process never imports torch: the judge work runs on an executor (:mod:`.executor`: one judge
in this process tree by default, or a pool's actors), the kernel only in the judges' sandboxed runners.
Timing runs only on a candidate that built, passed the audit and every correctness scenario it was asked
to run, so a fast but wrong kernel never gets a speed figure.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from pathlib import Path
from typing import Protocol

from quaere.evaluate.build import build_source
from quaere.evaluate.executor import Executor, LocalExecutor, TimedScenario
from quaere.evaluate.judging import job_for
from quaere.evaluate.options import EvalOptions, default_cache_dir, load_scenarios_file, process_environment
from quaere.evaluate.source_file import read_source, source_suffix
from quaere.evaluate.stats import roofline_floor_ms
from quaere.records import (
    AuditFinding,
    BenchmarkResult,
    BuildResult,
    BuildStatus,
    Evaluation,
    Scenario,
    ScenarioVerdict,
    TimingStatus,
    Verdict,
)
from quaere.task.loader import Task


class Progress(Protocol):
    """Told what the evaluator is doing, for a progress bar."""

    def begin(self, phase: str, total: int) -> None:
        """A phase ('build', 'correctness', 'timing') starts with ``total`` steps."""
        ...

    def advance(self, label: str) -> None:
        """One step of the current phase finished; ``label`` says which and how it went."""
        ...


class SilentProgress:
    """A :class:`Progress` that shows nothing (a hook, a service, piped output)."""

    def begin(self, phase: str, total: int) -> None:
        pass

    def advance(self, label: str) -> None:
        pass


def _static_audit(build: BuildResult, banned: tuple[str, ...], source: Path, task_folder: Path,
                  reference: BuildResult | None) -> tuple[tuple[AuditFinding, ...], str]:
    """Findings, and a note when some evidence could not be gathered (a missing tool such as cuobjdump):
    an empty audit is then an absence of evidence, and the record must say so. ``source`` is the
    evaluator's own copy of the bytes that were built; ``reference`` the initial kernel's build."""
    from quaere.evaluate.audit import AuditContext, run_audit

    report = run_audit(build, banned, AuditContext(source=source, task_folder=task_folder, reference=reference))
    gaps = [f"missing tool: {tool}" for tool in report.missing_tools] + list(report.notes)
    notes = ["audit incomplete: " + "; ".join(gaps)] if gaps else []
    notes += [f"audit warning: {w.rule}: {w.evidence}" for w in getattr(report, "warnings", ())]
    return tuple(report.findings), "; ".join(notes)


def _not_run(scenarios: list[Scenario], seed: int, why: str) -> tuple[ScenarioVerdict, ...]:
    return tuple(ScenarioVerdict(scenario_id=s.id, verdict=Verdict.NOT_RUN, seed=seed, detail=why) for s in scenarios)


def _why_not_run(build: BuildResult, options: EvalOptions, reason: str) -> str:
    if build.status is not BuildStatus.OK:
        return "build failed: nothing was run"
    if options.no_device:
        return "no_device requested: build and audit only, nothing was run"
    return f"no GPU ({reason}): nothing was run" if reason else ""


def _benchmark_scenarios(task: Task, options: EvalOptions) -> tuple[list[Scenario], str]:
    """The configurations to time, and a note naming asked-for ids the task does not have."""
    scenarios = list(task.module.benchmark_scenarios())
    if options.benchmark_ids is None:
        return scenarios, ""
    unknown = sorted(options.benchmark_ids - {s.id for s in scenarios})
    note = f"unknown benchmark ids ignored: {', '.join(unknown)}" if unknown else ""
    return [s for s in scenarios if s.id in options.benchmark_ids], note


def _benchmark_result(task: Task, timed: TimedScenario) -> BenchmarkResult:
    """The record of one timed configuration: its roofline floor, and whether the candidate beat it."""
    spec, module, scenario = task.spec, task.module, timed.scenario
    flops = float(module.flops(scenario))
    bound_ms = roofline_floor_ms(flops, float(module.min_bytes(scenario)), spec.roofline.matrix_tflops,
                                 spec.roofline.bandwidth_gbps)
    result = BenchmarkResult(scenario_id=scenario.id, flops=flops, bound_ms=bound_ms, timings=timed.timings,
                             placement=timed.placement)
    candidate = result.timing("candidate")
    suspect = candidate is not None and candidate.status is TimingStatus.MEASURED and candidate.median_ms < bound_ms
    return result.model_copy(update={"suspect": suspect})


def run_evaluation(task: Task, candidate: Path, options: EvalOptions, progress: Progress | None = None,
                   executor: Executor | None = None) -> Evaluation:
    """Evaluate ``candidate`` (a kernel source file, read once) on ``task``; never raises for a bad candidate, but
    ``OSError`` for one that cannot be read.

    Build and audit run here; the judge work runs on ``executor`` (None: one judge in this process tree,
    every scenario in turn; a pool of :mod:`quaere.evaluate.pool` spreads it over Ray actors).
    Raises :class:`~quaere.evaluate.options.ScenariosFileError` for a malformed scenarios file.
    """
    progress = progress or SilentProgress()
    created_at, started = time.time(), time.monotonic()
    cache = options.cache_dir or default_cache_dir()
    executor = executor or LocalExecutor(cache, process_environment())
    seed = options.seed if options.seed is not None else secrets.randbelow(2**31)
    scenarios = (load_scenarios_file(options.scenarios_file) if options.scenarios_file
                 else list(task.module.correctness_scenarios()))
    # Read once: these bytes are the candidate's hash, the build's key, what is compiled (the build's own copy of
    # them) and what the audit reads, whatever becomes of the file meanwhile. A link, a name with another suffix
    # than the task's sources or bytes that are not source text fail the build, saying why.
    source = read_source(candidate, source_suffix(task.spec))
    candidate_hash = hashlib.sha256(source.data).hexdigest()
    progress.begin("build", 1)
    build = build_source(task.spec, candidate, cache / "builds", task.folder, options.build_timeout_s,
                         options.unreadable, read=source)
    progress.advance(f"build: {build.status.value}")
    initial = build_source(task.spec, task.initial_kernel, cache / "builds", task.folder, options.build_timeout_s,
                           options.unreadable)
    reference = initial if initial.status is BuildStatus.OK else None
    audit, audit_note = ((_static_audit(build, task.spec.banned, Path(build.snapshot), task.folder, reference))
                         if build.status is BuildStatus.OK else ((), ""))
    probe = executor.probe(task.spec.device)
    base = {"task": task.spec.name, "candidate_path": str(candidate), "candidate_hash": candidate_hash,
            "created_at": created_at, "device": probe.info, "build": build}
    why = _why_not_run(build, options, probe.reason)
    if why:
        note = "; ".join(n for n in (why, audit_note) if n)
        return Evaluation(**base, audit=audit, ran=False, correctness=_not_run(scenarios, seed, why), note=note,
                          wall_s=time.monotonic() - started)
    notes: list[str] = [f"scenarios from {options.scenarios_file}"] if options.scenarios_file else []
    notes += [audit_note] if audit_note else []
    verdicts: tuple[ScenarioVerdict, ...] = ()
    benches: tuple[BenchmarkResult, ...] = ()
    kernels = {"candidate": build.artifact}
    if options.benchmark:
        if reference is not None:
            kernels["initial"] = reference.artifact
        else:
            notes.append("the initial kernel failed to build: it is not timed")
    with executor.open(job_for(task, kernels, seed, options)) as judging:
        if options.correctness:
            verdicts = judging.check(scenarios, progress)
        failed = sum(not v.verdict.passed for v in verdicts)
        if options.benchmark and (audit or failed):
            notes.append(f"timing skipped: {'audit findings' if audit else f'{failed} scenario(s) failed'}")
        elif options.benchmark:
            configurations, note = _benchmark_scenarios(task, options)
            benches = tuple(_benchmark_result(task, t) for t in judging.time(configurations, progress))
            notes.extend([note] if note else [])
        report = judging.report()
    audit = audit + tuple(f for f in report.findings if f not in audit)
    notes.extend(report.notes)
    notes.extend(f"isolation: {n}" for n in report.isolation.notes)
    return Evaluation(**base, audit=audit, ran=True, correctness=verdicts, benchmarks=benches,
                      isolation=report.isolation, note="; ".join(notes), wall_s=time.monotonic() - started)
