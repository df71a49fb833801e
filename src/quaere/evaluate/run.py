"""``run_evaluation``: build -> audit -> correctness -> timing, one :class:`Evaluation` out.

The parent process never imports torch: the kernel runs in workers (see ``supervisor`` and ``worker``).
Timing runs only on a candidate that built, passed the audit and every correctness scenario it was asked
to run, so a fast but wrong kernel never gets a speed figure.
"""

from __future__ import annotations

import hashlib
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Protocol

from quaere.evaluate.build import build_source
from quaere.evaluate.device import probe_device
from quaere.evaluate.judge_protocol import TimeRequest
from quaere.evaluate.options import EvalOptions, default_cache_dir, load_scenarios_file, process_environment
from quaere.evaluate.stats import roofline_floor_ms
from quaere.evaluate.supervisor import Supervisor, JudgeConfig
from quaere.records import (
    AuditFinding,
    BenchmarkResult,
    BuildResult,
    BuildStatus,
    Evaluation,
    Isolation,
    Scenario,
    ScenarioVerdict,
    TimingStatus,
    Verdict,
)
from quaere.task.loader import Task
from quaere.workspace import content_hash


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


def _snapshot(source_bytes: bytes, digest: str, suffix: str, cache: Path) -> Path:
    """The evaluator's copy of the candidate's bytes (the audit reads this, never the workspace file)."""
    path = _mkdir(cache / "sources") / f"{digest}{suffix}"
    if not path.exists():
        path.write_bytes(source_bytes)
    return path


class _RuntimeGuard:
    """The dlopen guard of the runners: what their environment gains, and the findings in its log so far."""

    def __init__(self, banned: tuple[str, ...], cache: Path, log_dir: Path, artifact: str,
                 environment: dict[str, str]) -> None:
        self.banned, self.artifact = banned, Path(artifact)
        self.log_path = log_dir / "runtime-guard.log"
        self.env: dict[str, str] = {}
        self.note = ""
        self.inactive = ""
        """Why the log showed no guard at the last look ('' once it did); reported if it stays so."""
        self.mapped: list[AuditFinding] = []
        """Banned libraries the judge saw mapped in the candidate's runner (from /proc, by content)."""
        self.active = False
        if not banned:
            return
        from quaere.evaluate.runtime_guard import GuardUnavailable, guard_environment

        try:
            self.env.update(guard_environment(cache / "runtime-guard", self.log_path, environment))
            self.active = True
        except GuardUnavailable as exc:
            self.note = f"dlopen guard unavailable ({exc}); only the maps diff watched run-time loads"

    trusted: frozenset[str] | None = None
    """Files mapped in the candidate's runner before it loaded the candidate (from the judge)."""

    def findings(self) -> tuple[AuditFinding, ...]:
        """Banned calls the candidate made so far; () before any worker started or without the guard."""
        if not self.active:
            return ()
        from quaere.evaluate.runtime_guard import GuardNotActive, runtime_findings

        try:
            found = tuple(runtime_findings(self.log_path, self.artifact, self.banned, trusted_objects=self.trusted))
        except GuardNotActive as exc:  # before the first worker started, or the shim did not load
            self.inactive = f"dlopen guard: {exc}"
            return ()
        self.inactive = ""
        return found


    def mark(self) -> int:
        """Where the log ends now: pass it to :meth:`findings_since` after the next scenario."""
        return self.log_path.stat().st_size if self.active and self.log_path.exists() else 0

    def findings_since(self, mark: int) -> tuple[AuditFinding, ...]:
        """Findings of the calls logged after ``mark`` (one scenario's), judged by the same rules."""
        if not self.active or not self.log_path.exists():
            return ()
        from quaere.evaluate.runtime_guard import GuardNotActive, runtime_findings

        text = self.log_path.read_bytes()
        announce = next((line for line in text[:mark].splitlines(keepends=True) if b"\tloaded\t" in line), b"")
        segment = self.log_path.with_suffix(".segment")
        segment.write_bytes(announce + text[mark:])  # the shim's announcement, then this scenario's calls
        try:
            return tuple(runtime_findings(segment, self.artifact, self.banned, trusted_objects=self.trusted))
        except GuardNotActive:
            return ()


LOADED_PREFIX = "loaded while the candidate ran: "


def _mapping_findings(detail: str) -> list[AuditFinding]:
    """The judge's maps evidence in a ``banned_at_runtime`` verdict, as audit findings (else none)."""
    from quaere.evaluate.maps import RUNTIME_MAPPING_NAME, RUNTIME_MAPPING_RATIONALE

    if not detail.startswith(LOADED_PREFIX):
        return []
    return [AuditFinding(rule=RUNTIME_MAPPING_NAME, rationale=RUNTIME_MAPPING_RATIONALE, evidence=detail[len(LOADED_PREFIX):])]


def _not_run(scenarios: list[Scenario], seed: int, why: str) -> tuple[ScenarioVerdict, ...]:
    return tuple(ScenarioVerdict(scenario_id=s.id, verdict=Verdict.NOT_RUN, seed=seed, detail=why) for s in scenarios)


def _why_not_run(build: BuildResult, options: EvalOptions, reason: str) -> str:
    if build.status is not BuildStatus.OK:
        return "build failed: nothing was run"
    if options.no_device:
        return "no_device requested: build and audit only, nothing was run"
    return f"no GPU ({reason}): nothing was run" if reason else ""


MAX_TIMEOUTS = 2
"""After this many scenarios timed out, the rest are not run: a kernel that hangs would otherwise cost
every scenario's full time limit (20 scenarios x 20 s on the CPU task). Two, not one: a single timeout
can be one pathological shape; the same failure twice says the kernel hangs."""


def _skipped_after_timeouts(timed_out: list[str], timeout_s: float) -> str:
    """The reason given to every scenario skipped after :data:`MAX_TIMEOUTS` timeouts."""
    return (f"not run: scenarios {', '.join(timed_out)} each timed out (limit {timeout_s:g} s); "
            f"after {MAX_TIMEOUTS} timeouts the rest are skipped")


def _correctness(
    task: Task, scenarios: list[Scenario], seed: int, options: EvalOptions, sup: Supervisor,
    guard: _RuntimeGuard, progress: Progress,
) -> tuple[ScenarioVerdict, ...]:
    rule = task.spec.correctness
    timeout_s = options.scenario_timeout_s or rule.scenario_timeout_s
    progress.begin("correctness", len(scenarios))
    verdicts: list[ScenarioVerdict] = []
    for scenario in scenarios:
        timed_out = [v.scenario_id for v in verdicts if v.verdict is Verdict.TIMED_OUT]
        if len(timed_out) >= MAX_TIMEOUTS:
            why = _skipped_after_timeouts(timed_out, timeout_s)
            verdicts.append(ScenarioVerdict(scenario_id=scenario.id, verdict=Verdict.NOT_RUN, seed=seed, detail=why))
            progress.advance(f"{scenario.id}: not run")
            continue
        mark = guard.mark()
        verdict = sup.check(scenario, seed, rule.factor, rule.floor, timeout_s)
        guard.trusted = sup.trusted_objects
        found = guard.findings_since(mark)
        if found and verdict.verdict.passed:
            evidence = "; ".join(f.evidence for f in found)
            verdict = verdict.model_copy(update={"verdict": Verdict.BANNED_AT_RUNTIME, "detail": evidence})
        if verdict.verdict is Verdict.BANNED_AT_RUNTIME:
            guard.mapped.extend(_mapping_findings(verdict.detail))
        verdicts.append(verdict)
        progress.advance(f"{scenario.id}: {verdict.verdict.value}")
    return tuple(verdicts)


def _benchmarks(task: Task, seed: int, options: EvalOptions, sup: Supervisor, progress: Progress) -> tuple[tuple[BenchmarkResult, ...], str]:
    spec, module = task.spec, task.module
    scenarios = module.benchmark_scenarios()
    note = ""
    if options.benchmark_ids is not None:
        unknown = sorted(options.benchmark_ids - {s.id for s in scenarios})
        note = f"unknown benchmark ids ignored: {', '.join(unknown)}" if unknown else ""
        scenarios = [s for s in scenarios if s.id in options.benchmark_ids]
    comparisons = tuple(c.name for c in spec.comparisons)
    impls = ("candidate", "initial", *comparisons)
    progress.begin("timing", len(scenarios))
    results = []
    for scenario in scenarios:
        message = TimeRequest(scenario=scenario, seed=seed, factor=spec.correctness.factor,
                              floor=spec.correctness.floor, timing=spec.timing, comparisons=comparisons,
                              timeout_s=spec.correctness.scenario_timeout_s,
                              call_log=str(options.call_log) if options.call_log else None)
        timings = sup.time(message, impls, options.benchmark_timeout_s)
        flops = float(module.flops(scenario))
        bound_ms = roofline_floor_ms(flops, float(module.min_bytes(scenario)), spec.roofline.matrix_tflops,
                                     spec.roofline.bandwidth_gbps)
        result = BenchmarkResult(scenario_id=scenario.id, flops=flops, bound_ms=bound_ms, timings=tuple(timings))
        candidate = result.timing("candidate")
        suspect = candidate is not None and candidate.status is TimingStatus.MEASURED and candidate.median_ms < bound_ms
        results.append(result.model_copy(update={"suspect": suspect}))
        progress.advance(f"{scenario.id}: {candidate.status.value if candidate else '?'}")
    return tuple(results), note


def run_evaluation(task: Task, candidate: Path, options: EvalOptions, progress: Progress | None = None) -> Evaluation:
    """Evaluate ``candidate`` (a kernel source file) on ``task``; never raises for a bad candidate.

    Raises :class:`~quaere.evaluate.options.ScenariosFileError` for a malformed scenarios file.
    """
    progress = progress or SilentProgress()
    created_at, started = time.time(), time.monotonic()
    cache = options.cache_dir or default_cache_dir()
    seed = options.seed if options.seed is not None else secrets.randbelow(2**31)
    scenarios = (load_scenarios_file(options.scenarios_file) if options.scenarios_file
                 else list(task.module.correctness_scenarios()))
    source_bytes = candidate.read_bytes()
    candidate_hash = hashlib.sha256(source_bytes).hexdigest()  # build_source refuses a file that changes under it
    progress.begin("build", 1)
    build = build_source(task.spec, candidate, cache / "builds", task.folder, options.build_timeout_s)
    if build.status is BuildStatus.OK and content_hash(candidate) != candidate_hash:
        build = build.model_copy(update={"status": BuildStatus.BUILD_FAILED, "artifact": "",
                                         "log_tail": f"[quaere] {candidate} changed during the build; evaluate again"})
    progress.advance(f"build: {build.status.value}")
    initial = build_source(task.spec, task.initial_kernel, cache / "builds", task.folder, options.build_timeout_s)
    reference = initial if initial.status is BuildStatus.OK else None
    snapshot = _snapshot(source_bytes, candidate_hash, candidate.suffix, cache)
    audit, audit_note = ((_static_audit(build, task.spec.banned, snapshot, task.folder, reference))
                         if build.status is BuildStatus.OK else ((), ""))
    probe = probe_device(task.spec.device)
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
    log_dir = Path(tempfile.mkdtemp(prefix="run.", dir=_mkdir(cache / "runs")))
    environment = process_environment()
    isolation = Isolation(separate_process=False, notes=("nothing was run",))
    try:
        guard = _RuntimeGuard(task.spec.banned, cache, log_dir, build.artifact, environment)
        kernels = {"candidate": build.artifact}
        if options.benchmark:
            if reference is not None:
                kernels["initial"] = reference.artifact
            else:
                notes.append("the initial kernel failed to build: it is not timed")
        config = JudgeConfig(task_folder=task.folder, kernels=kernels, banned=task.spec.banned, env=environment,
                              guard_env=guard.env, log_dir=log_dir, start_timeout_s=options.worker_start_timeout_s,
                              sandbox=options.sandbox, threads=options.runner_threads)
        with Supervisor(config) as sup:
            if options.correctness:
                verdicts = _correctness(task, scenarios, seed, options, sup, guard, progress)
            failed = sum(not v.verdict.passed for v in verdicts)
            if options.benchmark and (audit or failed):
                notes.append(f"timing skipped: {'audit findings' if audit else f'{failed} scenario(s) failed'}")
            elif options.benchmark:
                benches, note = _benchmarks(task, seed, options, sup, progress)
                notes.extend(n for n in (note, sup.clock_note) if n)
            isolation = sup.isolation
        audit = audit + tuple(f for f in (*guard.findings(), *guard.mapped) if f not in audit)
        notes.extend(n for n in (guard.note, guard.inactive) if n)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    notes.extend(f"isolation: {n}" for n in isolation.notes)
    return Evaluation(**base, audit=audit, ran=True, correctness=verdicts, benchmarks=benches, isolation=isolation,
                      note="; ".join(notes), wall_s=time.monotonic() - started)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
