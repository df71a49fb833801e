"""``quaere task check DIR``: is this task sound? One row per question, the task sound only when every row
passes (or does not apply).

Static: no place is left to fill, the task loads, its scenario ids are unique, the initial kernel builds,
the benchmark set is big enough to time and its roofline figures are consistent. Run (on the task's
device): both references on every correctness scenario, null candidates (zeros, an input copy, and for
an exact task a one-ulp-off output) fail every one, ``sample()`` agrees with the full references, and the
real evaluator (:func:`quaere.evaluate.run_evaluation`) passes the initial kernel on every scenario and
times it above the roofline floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from quaere.evaluate import EvalOptions, run_evaluation
from quaere.evaluate.arrays import ops_for
from quaere.evaluate.build import build_source
from quaere.evaluate.correctness import Rule
from quaere.evaluate.device import probe_device
from quaere.evaluate.options import default_cache_dir
from quaere.evaluate.stats import roofline_floor_ms
from quaere.records import BuildStatus, TimingStatus
from quaere.task.check_refs import ULP_NULL, ScenarioFacts, sample_problem, scenario_facts
from quaere.task.loader import Task, load_task, resolve_task_folder
from quaere.task.spec import TaskError, parse_task_toml
from quaere.task.todos import find_todos


class CheckName(str, Enum):
    PLACES = "places to fill"
    LOADS = "task loads"
    SCENARIOS = "scenario sets"
    BUILD = "initial kernel builds"
    REFERENCES = "references, both precisions"
    NULLS = "null candidates fail"
    ONE_ULP = "one-ulp-off output fails"
    SAMPLE = "sample() matches references"
    INITIAL = "initial kernel passes"
    BENCHMARK = "benchmark sizes"
    ROOFLINE = "roofline figures"


class CheckStatus(str, Enum):
    PASSED = "ok"
    FAILED = "FAIL"
    SKIPPED = "skipped"  # not run: an earlier check failed, or the device is not here
    NOT_APPLICABLE = "n/a"  # the question does not arise for this task


@dataclass(frozen=True)
class CheckRow:
    name: CheckName
    status: CheckStatus
    detail: str = ""


@dataclass(frozen=True)
class CheckOptions:
    cache_dir: Path | None = None
    """Where builds and runs go (None: the evaluator's default)."""
    seed: int = 1
    """Seed of the inputs of every check and of the evaluation."""
    no_device: bool = False
    """Static checks only (build included): for a GPU task on a machine without one."""
    benchmark: bool = True
    """Time the benchmark set in the evaluation (the roofline's run-time half)."""


@dataclass(frozen=True)
class CheckReport:
    folder: Path
    rows: tuple[CheckRow, ...] = field(default_factory=tuple)
    static_only: bool = False

    @property
    def sound(self) -> bool:
        """Every row passed or does not apply; with ``static_only``, rows skipped for the device are allowed."""
        allowed = {CheckStatus.PASSED, CheckStatus.NOT_APPLICABLE}
        if self.static_only:
            allowed.add(CheckStatus.SKIPPED)
        return all(row.status in allowed for row in self.rows)


MIN_FLOOR_MS = {"cuda": 0.002, "cpu": 0.01}
"""A benchmark configuration whose roofline floor is below this times its launch, not its work."""
MAX_SCENARIO_BYTES = {"cuda": 32 << 30, "cpu": 4 << 30}
SHOWN = 4  # failing items listed in a row


def _listed(items: list[str]) -> str:
    more = f" (+{len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return "; ".join(items[:SHOWN]) + more


def _row(name: CheckName, failures: list[str], ok: str) -> CheckRow:
    return CheckRow(name, CheckStatus.FAILED, _listed(failures)) if failures else CheckRow(name, CheckStatus.PASSED, ok)


def _skipped(names: list[CheckName], why: str) -> list[CheckRow]:
    return [CheckRow(name, CheckStatus.SKIPPED, why) for name in names]


RUN_CHECKS = [CheckName.REFERENCES, CheckName.NULLS, CheckName.ONE_ULP, CheckName.SAMPLE, CheckName.INITIAL]


def places_row(folder: Path) -> CheckRow:
    try:
        module = parse_task_toml(folder / "task.toml").module
    except TaskError:
        module = "task.py"  # the loader reports the toml itself
    path = folder / module
    try:
        todos = find_todos(path.read_text(), str(path))
    except (OSError, SyntaxError) as exc:
        return CheckRow(CheckName.PLACES, CheckStatus.FAILED, f"{path}: {exc}")
    found = [f"{module}:{t.line}: {t.what}" for t in todos]
    return CheckRow(CheckName.PLACES, CheckStatus.FAILED, "\n".join(found)) if found else CheckRow(
        CheckName.PLACES, CheckStatus.PASSED, "none left")


def scenarios_row(task: Task) -> CheckRow:
    correctness = task.module.correctness_scenarios()
    bench = task.module.benchmark_scenarios()
    failures = []
    for label, scenarios in (("correctness", correctness), ("benchmark", bench)):
        ids = [s.id for s in scenarios]
        if not ids:
            failures.append(f"the {label} set is empty")
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        failures += [f"{label} id '{i}' repeats" for i in repeated]
    return _row(CheckName.SCENARIOS, failures, f"{len(correctness)} correctness, {len(bench)} benchmark")


def benchmark_row(task: Task) -> CheckRow:
    spec, module = task.spec, task.module
    failures, floors = [], []
    for scenario in module.benchmark_scenarios():
        outputs = sum(math.prod(s.shape) for s in module.output_specs(scenario).values())
        floor_ms = roofline_floor_ms(float(module.flops(scenario)), float(module.min_bytes(scenario)),
                                     spec.roofline.matrix_tflops, spec.roofline.bandwidth_gbps)
        floors.append(floor_ms)
        if floor_ms < MIN_FLOOR_MS[spec.device]:
            failures.append(f"{scenario.id}: roofline floor {floor_ms * 1e3:.2g} us < "
                            f"{MIN_FLOOR_MS[spec.device] * 1e3:g} us (a launch, not the work, would be timed): "
                            "make it larger")
        if float(module.min_bytes(scenario)) > MAX_SCENARIO_BYTES[spec.device] or outputs == 0:
            failures.append(f"{scenario.id}: {module.min_bytes(scenario) / 2**30:.3g} GiB, {outputs} output elements; "
                            f"expected 1 element to {MAX_SCENARIO_BYTES[spec.device] >> 30} GiB")
    ok = f"floors {min(floors) * 1e3:.3g}-{max(floors) * 1e3:.3g} us" if floors else ""
    return _row(CheckName.BENCHMARK, failures, ok)


def static_roofline(task: Task) -> list[str]:
    """Per scenario: FLOPs finite and >= 0, bytes at least the outputs' (each is written once)."""
    from quaere.evaluate.shared import DTYPE_BYTES

    failures = []
    module = task.module
    for scenario in [*module.correctness_scenarios(), *module.benchmark_scenarios()]:
        flops, nbytes = float(module.flops(scenario)), float(module.min_bytes(scenario))
        written = sum(math.prod(s.shape) * DTYPE_BYTES[s.dtype] for s in module.output_specs(scenario).values())
        if not (math.isfinite(flops) and flops >= 0):
            failures.append(f"{scenario.id}: flops() = {flops}; expected a finite number >= 0")
        if not nbytes >= written:
            failures.append(f"{scenario.id}: min_bytes() = {nbytes:.0f} < {written} bytes of outputs written once")
    return failures


def build_row(task: Task, options: CheckOptions) -> CheckRow:
    cache = (options.cache_dir or default_cache_dir()) / "builds"
    build = build_source(task.spec, task.initial_kernel, cache, task.folder)
    if build.status is BuildStatus.OK:
        return CheckRow(CheckName.BUILD, CheckStatus.PASSED, f"{build.duration_s:.1f} s")
    return CheckRow(CheckName.BUILD, CheckStatus.FAILED, "\n".join(build.log_tail.splitlines()[-3:]))


def reference_rows(task: Task, seed: int) -> tuple[list[CheckRow], list[ScenarioFacts]]:
    """References, nulls and one-ulp-off over every correctness scenario; sample() on the benchmark set."""
    ops = ops_for(task.spec.device)
    rule = Rule(task.spec.correctness.factor, task.spec.correctness.floor)
    facts = [scenario_facts(task, ops, s, seed, rule) for s in task.module.correctness_scenarios()]
    usable = [f for f in facts if not f.problem]
    refs = _row(CheckName.REFERENCES, [f"{f.scenario_id}: {f.problem}" for f in facts if f.problem],
                f"{len(facts)} scenarios; low vs high error <= {max((f.low_error for f in usable), default=0):.3g}")
    nulls = _row(CheckName.NULLS, [f"{f.scenario_id}: {', '.join(f.passing_nulls)} would pass" for f in usable
                                   if f.passing_nulls], f"zeros and an input copy fail all {len(usable)}")
    inexact = [f for f in usable if f.low_error > 0]
    if inexact or not usable:
        worst = max(inexact, key=lambda f: f.low_error) if inexact else None
        ulp = CheckRow(CheckName.ONE_ULP, CheckStatus.NOT_APPLICABLE, f"not an exact task: the low reference is "
                       f"{worst.low_error:.3g} off on {worst.scenario_id}" if worst else "no usable scenario")
    else:
        ulp = _row(CheckName.ONE_ULP, [f"{f.scenario_id}: {ULP_NULL} passes (floor {task.spec.correctness.floor:g} "
                                       "is not below one ulp)" for f in usable if f.ulp_passes],
                   f"exact task: fails all {len(usable)}")
    if not hasattr(task.module, "sample"):
        sample = CheckRow(CheckName.SAMPLE, CheckStatus.NOT_APPLICABLE,
                          "no sample(): timed outputs get full references")
    else:
        problems = [sample_problem(task, ops, s, seed, rule) for s in task.module.benchmark_scenarios()]
        sample = _row(CheckName.SAMPLE, [p for p in problems if p], f"{len(problems)} benchmark configurations")
    return [refs, nulls, ulp, sample], facts


def evaluation_rows(task: Task, options: CheckOptions, facts: list[ScenarioFacts]) -> list[CheckRow]:
    """The real evaluator on the initial kernel: every scenario passes; timed above the roofline floor."""
    evaluation = run_evaluation(task, task.initial_kernel, EvalOptions(
        seed=options.seed, cache_dir=options.cache_dir, benchmark=options.benchmark))
    failures = [f"audit: {f.rule}: {f.evidence}" for f in evaluation.audit]
    failures += [f"{v.scenario_id}: {v.verdict.value} {v.detail}".strip() for v in evaluation.failing()]
    initial = _row(CheckName.INITIAL, failures, f"{len(evaluation.correctness)} scenarios passed, audit clean")
    by_id = {s.id: s for s in task.module.correctness_scenarios()}
    roofline = static_roofline(task)
    roofline += [f"{f.scenario_id}: min_bytes() above every input read and output written once "
                 f"({f.input_bytes + f.output_bytes} bytes)" for f in facts if not f.problem
                 and float(task.module.min_bytes(by_id[f.scenario_id])) > f.input_bytes + f.output_bytes]
    timed = 0
    for bench in evaluation.benchmarks:
        timing = bench.timing("initial") or bench.timing("candidate")
        if timing is None or timing.status is not TimingStatus.MEASURED:
            why = timing.detail if timing else "?"
            roofline.append(f"{bench.scenario_id}: the initial kernel was not timed ({why})")
        elif timing.median_ms < bench.bound_ms:
            roofline.append(f"{bench.scenario_id}: the initial kernel ran in {timing.median_ms:.3g} ms, below the "
                            f"floor {bench.bound_ms:.3g} ms: flops(), min_bytes() or [roofline] overstate it")
        else:
            timed += 1
    ok = f"initial kernel above the floor on {timed} configurations" if timed else "consistent (not timed)"
    return [initial, _row(CheckName.ROOFLINE, roofline, ok)]


def check_task(folder_or_name: str, options: CheckOptions) -> CheckReport:
    """Every check of the task in ``folder_or_name`` (a folder or a shipped task's name), in order; a check
    that cannot run after an earlier failure is ``skipped``."""
    folder = resolve_task_folder(folder_or_name) if not Path(folder_or_name).is_dir() else Path(folder_or_name)
    rows = [places_row(folder)]
    later = [CheckName.LOADS, CheckName.SCENARIOS, CheckName.BUILD, *RUN_CHECKS, CheckName.BENCHMARK,
             CheckName.ROOFLINE]
    if rows[0].status is CheckStatus.FAILED:
        return CheckReport(folder, tuple(rows + _skipped(later, "places are left to fill")))
    try:
        task = load_task(str(folder))
        rows += [CheckRow(CheckName.LOADS, CheckStatus.PASSED, f"{task.spec.name} ({task.spec.device})"),
                 scenarios_row(task)]
    except TaskError as exc:
        rows.append(CheckRow(CheckName.LOADS, CheckStatus.FAILED, str(exc)))
        return CheckReport(folder, tuple(rows + _skipped(later[1:], "the task does not load")))
    rows.append(build_row(task, options))
    probe = probe_device(task.spec.device)
    static_only = options.no_device or not probe.available
    if static_only or rows[-1].status is CheckStatus.FAILED:
        why = ("--no-device: static checks only" if options.no_device else f"no device: {probe.reason}"
               if not probe.available else "the initial kernel does not build")
        rows += _skipped(RUN_CHECKS, why) + [benchmark_row(task), _row(CheckName.ROOFLINE, static_roofline(task),
                                                                        "consistent (not timed)")]
        return CheckReport(folder, tuple(rows), static_only=options.no_device)
    run_rows, facts = reference_rows(task, options.seed)
    rows += run_rows
    if any(r.status is CheckStatus.FAILED for r in run_rows):
        rows += _skipped([CheckName.INITIAL], "the references or nulls failed") + [benchmark_row(task)]
        return CheckReport(folder, tuple(rows + [_row(CheckName.ROOFLINE, static_roofline(task), "consistent")]))
    initial, roofline = evaluation_rows(task, options, facts)
    return CheckReport(folder, tuple(rows + [initial, benchmark_row(task), roofline]))
