"""``quaere tool profile``: a profiler digest of the current candidate, from every source this machine has.

1. Achieved vs roofline per configuration, from the ledger's latest evaluation of the current file
   (:mod:`.roofline`; any task, CPU included).
2. The build (the evaluator's own command and cache): registers, stack, shared and local memory per kernel
   and ptxas spill lines (CUDA), and the instruction mix (SASS, or x86 for a CPU task) (:mod:`.binary`).
3. Nsight Compute sections on one configuration (by default the one furthest from its roofline), where
   ``ncu`` works (:mod:`.ncu`); otherwise the digest says why there are none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from quaere.methods.binary import KernelResources, Mix, disassemble, resource_usage, run_tool, spill_lines
from quaere.methods.machine import Programs
from quaere.methods.ncu import NcuResult, NcuStatus, profile_kernel
from quaere.methods.roofline import RooflineRow, roofline_rows, task_min_bytes
from quaere.records import BuildResult, BuildStatus, Evaluation
from quaere.task import Task
from quaere.workspace import Workspace, content_hash


@dataclass(frozen=True)
class BuildFacts:
    """What the built artifact says: its instruction mix and, for CUDA, resources per kernel and spills."""

    mix: Mix | None = None
    mix_note: str = ""  # why there is no mix
    resources: tuple[KernelResources, ...] = ()
    spills: tuple[tuple[int, int], ...] = ()  # (store bytes, load bytes) per ptxas report


@dataclass(frozen=True)
class Digest:
    candidate_hash: str
    evaluation_note: str  # which evaluation the roofline rows come from, or why there are none
    roofline: tuple[RooflineRow, ...] = ()
    build_note: str = ""
    build: BuildFacts = field(default_factory=BuildFacts)
    ncu: NcuResult = field(default_factory=lambda: NcuResult(NcuStatus.ABSENT))
    ncu_scenario: str = ""


def _evaluation(evaluations: Sequence[Evaluation], digest: str) -> tuple[Evaluation | None, str]:
    mine = [e for e in evaluations if e.candidate_hash == digest and e.benchmarks]
    if mine:
        latest = mine[-1]
        return latest, f"latest timed evaluation of this file ({len(latest.benchmarks)} configurations)"
    if any(e.candidate_hash == digest for e in evaluations):
        return None, "this file was evaluated but nothing was timed (it failed, or no device): no roofline figures"
    return None, "this file has not been evaluated: run `quaere eval` for the roofline figures"


def _worst(rows: Sequence[RooflineRow]) -> str:
    measured = [r for r in rows if math.isfinite(r.achieved)]
    return min(measured, key=lambda r: r.achieved).scenario_id if measured else ""


def build_facts(build: BuildResult, cuda: bool, programs: Programs, entry: str) -> BuildFacts:
    """Disassemble the built artifact (and, for CUDA, read its resources and the build log's spill lines)."""
    artifact = Path(build.artifact)
    tool = programs.cuobjdump if cuda else programs.objdump
    if tool is None:
        name = "cuobjdump" if cuda else "objdump"
        return BuildFacts(mix_note=f"{name} not found on this machine: no instruction mix or register counts")
    mix, note = disassemble(artifact, cuda, tool, entry)
    if not cuda:
        return BuildFacts(mix, note)
    text, _ = run_tool([str(tool), "-res-usage", str(artifact)])
    log = artifact.with_name("build.log")
    spills = spill_lines(log.read_text(errors="replace") if log.is_file() else build.log_tail)
    return BuildFacts(mix, note, resource_usage(text), spills)


def profile_candidate(
    workspace: Workspace,
    task: Task,
    programs: Programs,
    evaluations: Sequence[Evaluation],
    cache_dir: Path,
    scenario: str | None = None,
    ncu_timeout_s: float = 300.0,
) -> Digest:
    """The digest of ``workspace``'s current candidate (``scenario``: the configuration ncu profiles)."""
    from quaere.evaluate.build import build_source

    digest = content_hash(workspace.candidate)
    evaluation, note = _evaluation(evaluations, digest)
    rows: tuple[RooflineRow, ...] = ()
    if evaluation is not None:
        min_bytes = task_min_bytes(task.module, _benchmarks(task))
        rows = roofline_rows(evaluation, task.spec.roofline, min_bytes)
    cuda = task.spec.device == "cuda"
    build = build_source(task.spec, workspace.candidate, cache_dir / "builds", task.folder)
    if build.status is not BuildStatus.OK:
        return Digest(digest, note, rows, build_note=f"the build failed:\n{build.log_tail}")
    facts = build_facts(build, cuda, programs, task.spec.entry_point)
    chosen = scenario or _worst(rows) or _first_benchmark(task)
    ncu = NcuResult(NcuStatus.ABSENT, note=programs.ncu_note)
    if programs.ncu is not None and cuda and chosen:
        ncu = profile_kernel(programs.ncu, str(task.folder), Path(build.artifact), chosen, ncu_timeout_s)
    return Digest(digest, note, rows, f"built with the task's command: {build.artifact}", facts, ncu, chosen)


def _benchmarks(task: Task) -> list[object]:
    try:
        return list(task.module.benchmark_scenarios())
    except Exception:  # noqa: BLE001 - a module that cannot list here: no memory floors, nothing else lost
        return []


def _first_benchmark(task: Task) -> str:
    scenarios = _benchmarks(task)
    return str(getattr(scenarios[0], "id", "")) if scenarios else ""
