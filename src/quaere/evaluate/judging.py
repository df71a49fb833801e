"""One judge at work for one candidate: what it is given (:class:`JudgeJob`), how it is driven
(:class:`JudgeSession`) and what it learned besides verdicts (:class:`SessionReport`).

The same session runs in ``quaere eval``'s own process tree (the sequential path) and inside a pool's Ray
actor, so a verdict cannot depend on where it was computed: the judge is started by the
:class:`~quaere.evaluate.supervisor.Supervisor`, never loads candidate code itself, and the dlopen guard
of its runners is read after every scenario on the machine where they ran.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from quaere.evaluate.guard_log import GuardLog, mapping_findings
from quaere.evaluate.isolation import judge_environment
from quaere.evaluate.judge_protocol import TimeRequest
from quaere.evaluate.options import EvalOptions
from quaere.evaluate.supervisor import JudgeConfig, Supervisor
from quaere.records import AuditFinding, Isolation, Scenario, ScenarioVerdict, Timing, Verdict
from quaere.task.loader import Task
from quaere.task.spec import TimingRule

Device = Literal["cpu", "cuda"]
"""A task's device (``TaskSpec.device``): what kind of judge it needs."""

MAX_TIMEOUTS = 2
"""After this many scenarios timed out, the rest are not run: a kernel that hangs would otherwise cost
every scenario's full time limit (20 scenarios x 20 s on the CPU task). Two, not one: a single timeout
can be one pathological shape; the same failure twice says the kernel hangs."""


def skipped_after_timeouts(timed_out: Sequence[str], timeout_s: float) -> str:
    """The reason given to every scenario skipped after :data:`MAX_TIMEOUTS` timeouts."""
    return (f"not run: scenarios {', '.join(timed_out)} each timed out (limit {timeout_s:g} s); "
            f"after {MAX_TIMEOUTS} timeouts the rest are skipped")


@dataclass(frozen=True)
class JudgeJob:
    """Everything a judge needs to evaluate one candidate (picklable: it travels to a pool's actors)."""

    task_folder: Path
    device: Device
    """The task's device: 'cpu' or 'cuda'."""
    kernels: Mapping[str, str]
    """Built library by implementation ('candidate', and 'initial' when it is timed)."""
    banned: tuple[str, ...]
    seed: int
    factor: float
    floor: float
    scenario_timeout_s: float
    """Limit of one correctness scenario's runner call."""
    call_timeout_s: float
    """Limit of each timed runner call (the task's own scenario limit)."""
    benchmark_timeout_s: float
    start_timeout_s: float
    timing: TimingRule
    comparisons: tuple[str, ...]
    sandbox: bool = True
    threads: bool = False
    call_log: str | None = None
    unreadable: tuple[str, ...] = ()
    """Folders no runner may read (:attr:`~quaere.evaluate.options.EvalOptions.unreadable`)."""

    @property
    def impls(self) -> tuple[str, ...]:
        """Every implementation a benchmark configuration times, in the record's order."""
        return ("candidate", "initial", *self.comparisons)


def job_for(task: Task, kernels: Mapping[str, str], seed: int, options: EvalOptions) -> JudgeJob:
    """The job of evaluating ``kernels`` on ``task`` with inputs from ``seed``, as ``options`` ask."""
    spec = task.spec
    return JudgeJob(
        task_folder=task.folder, device=spec.device, kernels=dict(kernels), banned=spec.banned, seed=seed,
        factor=spec.correctness.factor, floor=spec.correctness.floor,
        scenario_timeout_s=options.scenario_timeout_s or spec.correctness.scenario_timeout_s,
        call_timeout_s=spec.correctness.scenario_timeout_s, benchmark_timeout_s=options.benchmark_timeout_s,
        start_timeout_s=options.worker_start_timeout_s, timing=spec.timing,
        comparisons=tuple(c.name for c in spec.comparisons), sandbox=options.sandbox, threads=options.runner_threads,
        call_log=str(options.call_log) if options.call_log else None,
        unreadable=tuple(str(path) for path in options.unreadable),
    )


@dataclass(frozen=True)
class SessionReport:
    """What a judge session learned besides verdicts and timings, for the evaluation's record."""

    isolation: Isolation = field(default_factory=Isolation.unreported)
    findings: tuple[AuditFinding, ...] = ()
    """Run-time audit findings: banned calls in the guard's log, banned libraries seen mapped."""
    notes: tuple[str, ...] = ()


def merge_reports(reports: Sequence[SessionReport]) -> SessionReport:
    """One report for an evaluation judged by several sessions: every finding and note, and the weakest
    isolation any session that started a runner had in force (the record never claims more than held)."""
    if not reports:
        return SessionReport()
    ran = [r.isolation for r in reports if r.isolation.runner_uid >= 0] or [reports[0].isolation]
    isolation = ran[0]
    if any(other != isolation for other in ran[1:]):
        notes = tuple(dict.fromkeys(n for i in ran for n in i.notes))
        isolation = isolation.model_copy(update={
            "separate_process": all(i.separate_process for i in ran), "seccomp": all(i.seccomp for i in ran),
            "landlock_abi": min(i.landlock_abi for i in ran), "threads_allowed": any(i.threads_allowed for i in ran),
            "capabilities_dropped": all(i.capabilities_dropped for i in ran),
            "notes": (*notes, "the pool's judges differed in isolation: the weakest is recorded"),
        })
    findings = tuple(dict.fromkeys(f for r in reports for f in r.findings))
    notes = tuple(dict.fromkeys(n for r in reports for n in r.notes))
    return SessionReport(isolation=isolation, findings=findings, notes=notes)


class JudgeSession:
    """One judge (and its runners) working for one candidate in this process tree; close it when done.

    ``environment`` is the judge's environment as the entry point read it (in a pool actor, the actor's own:
    Ray set its ``CUDA_VISIBLE_DEVICES`` to the GPU it pinned). Logs go to a fresh folder under ``cache``.
    """

    def __init__(self, job: JudgeJob, cache: Path, environment: Mapping[str, str]) -> None:
        self.job = job
        runs = cache / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        self.log_dir = Path(tempfile.mkdtemp(prefix="run.", dir=runs))
        try:
            self.guard = GuardLog(job.banned, cache, self.log_dir, job.kernels["candidate"])
        except BaseException:
            shutil.rmtree(self.log_dir, ignore_errors=True)
            raise
        env, dropped = judge_environment(environment)
        self.env_note = f"left out of the judge's environment: {', '.join(dropped)}" if dropped else ""
        config = JudgeConfig(task_folder=job.task_folder, kernels=dict(job.kernels), banned=job.banned,
                             env=env, guard_env=self.guard.env, log_dir=self.log_dir,
                             start_timeout_s=job.start_timeout_s, sandbox=job.sandbox, threads=job.threads,
                             unreadable=job.unreadable)
        self.supervisor = Supervisor(config)

    def check(self, scenario: Scenario) -> ScenarioVerdict:
        """The verdict on one correctness scenario, a banned call logged during it overriding a pass."""
        job, guard = self.job, self.guard
        mark = guard.mark()
        verdict = self.supervisor.check(scenario, job.seed, job.factor, job.floor, job.scenario_timeout_s)
        guard.trusted = self.supervisor.trusted_objects
        found = guard.findings_since(mark)
        if found and verdict.verdict.passed:
            evidence = "; ".join(f.evidence for f in found)
            verdict = verdict.model_copy(update={"verdict": Verdict.BANNED_AT_RUNTIME, "detail": evidence})
        if verdict.verdict is Verdict.BANNED_AT_RUNTIME:
            guard.mapped.extend(mapping_findings(verdict.detail))
        return verdict

    def time(self, scenario: Scenario) -> list[Timing]:
        """Every implementation of ``job.impls`` timed on ``scenario``, interleaved by this one judge."""
        job = self.job
        message = TimeRequest(scenario=scenario, seed=job.seed, factor=job.factor, floor=job.floor,
                              timing=job.timing, comparisons=job.comparisons, timeout_s=job.call_timeout_s,
                              call_log=job.call_log)
        return self.supervisor.time(message, job.impls, job.benchmark_timeout_s)

    @property
    def judge_deaths(self) -> int:
        """How many times this session's judge process died (and was replaced) so far."""
        return self.supervisor.judge_deaths

    def report(self) -> SessionReport:
        """Isolation in force, run-time findings and notes so far."""
        guard = self.guard
        findings = tuple(dict.fromkeys((*guard.findings(), *guard.mapped)))
        notes = tuple(n for n in (self.env_note, self.supervisor.clock_note, guard.note, guard.inactive) if n)
        return SessionReport(isolation=self.supervisor.isolation, findings=findings, notes=notes)

    def close(self, failing: type[BaseException] | None = None) -> None:
        """End the judge: gracefully, or at once when ``failing`` (the exception type unwinding, e.g. Ctrl-C's
        KeyboardInterrupt) says nobody waits for its answers."""
        try:
            self.supervisor.__exit__(failing, None, None)
        finally:
            shutil.rmtree(self.log_dir, ignore_errors=True)


def check_scenarios(session: JudgeSession, scenarios: Sequence[Scenario], timed_out_before: Sequence[str],
                    done: Callable[[ScenarioVerdict], None]) -> list[ScenarioVerdict]:
    """Verdicts on ``scenarios`` in order; once ``MAX_TIMEOUTS`` scenarios timed out (``timed_out_before``
    names those that did elsewhere, e.g. on another judge of the pool) the rest are ``not_run``. ``done``
    hears each."""
    verdicts: list[ScenarioVerdict] = []
    for scenario in scenarios:
        timed_out = [*timed_out_before, *(v.scenario_id for v in verdicts if v.verdict is Verdict.TIMED_OUT)]
        if len(timed_out) >= MAX_TIMEOUTS:
            why = skipped_after_timeouts(timed_out, session.job.scenario_timeout_s)
            verdict = ScenarioVerdict(scenario_id=scenario.id, verdict=Verdict.NOT_RUN, seed=session.job.seed,
                                      detail=why)
        else:
            verdict = session.check(scenario)
        verdicts.append(verdict)
        done(verdict)
    return verdicts
