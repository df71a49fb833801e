"""Nsight Compute sections of the candidate's kernels on one configuration, where ``ncu`` works.

``ncu --profile-from-start off --csv --page details --section ...`` runs :mod:`quaere.methods.launch`, which
calls the candidate once under ``cuProfilerStart``/``Stop``; the CSV rows (kernel, section, metric, unit,
value) are kept as they are. Where ncu is absent, lacks the permission to read the counters, or finds no
kernel, the status says so and the digest goes on without these sections.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis")


class NcuStatus(str, Enum):
    MEASURED = "measured"
    ABSENT = "absent"  # no working ncu on this machine (or a CPU task)
    NO_PERMISSION = "no_permission"  # ERR_NVGPUCTRPERM: the driver does not let this user read the counters
    FAILED = "failed"  # ncu or the launch failed; ``note`` has the tail of its output
    NO_KERNEL = "no_kernel"  # ncu ran but profiled no kernel


@dataclass(frozen=True)
class NcuMetric:
    kernel: str
    section: str
    name: str
    unit: str
    value: str


@dataclass(frozen=True)
class NcuResult:
    status: NcuStatus
    metrics: tuple[NcuMetric, ...] = ()
    note: str = ""


def parse_csv(text: str) -> tuple[NcuMetric, ...]:
    """The metric rows of ``ncu --csv --page details`` output (its ``==PROF==`` lines are skipped)."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if not lines:
        return ()
    metrics = []
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        if row.get("Metric Name"):
            metrics.append(NcuMetric(kernel=row.get("Kernel Name", "?"), section=row.get("Section Name", ""),
                                     name=row["Metric Name"], unit=row.get("Metric Unit", ""),
                                     value=row.get("Metric Value", "")))
    return tuple(metrics)


def profile_kernel(ncu: Path, task_ref: str, artifact: Path, scenario_id: str, timeout_s: float) -> NcuResult:
    """Run Nsight Compute on one call of ``artifact`` for ``scenario_id`` of the task."""
    command = [str(ncu), "--profile-from-start", "off", "--csv", "--page", "details"]
    for section in SECTIONS:
        command += ["--section", section]
    command += [sys.executable, "-m", "quaere.methods.launch", task_ref, str(artifact), scenario_id]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return NcuResult(NcuStatus.FAILED, note=f"ncu did not finish within {timeout_s:.0f} s")
    except OSError as exc:
        return NcuResult(NcuStatus.FAILED, note=f"{ncu}: {exc}")
    output = done.stdout + done.stderr
    if "ERR_NVGPUCTRPERM" in output:
        return NcuResult(NcuStatus.NO_PERMISSION, note="the driver does not let this user read GPU performance "
                         "counters (ERR_NVGPUCTRPERM); an administrator can allow it "
                         "(NVreg_RestrictProfilingToAdminUsers=0)")
    metrics = parse_csv(done.stdout)
    if metrics:
        return NcuResult(NcuStatus.MEASURED, metrics)
    tail = "\n".join(output.strip().splitlines()[-8:])
    if done.returncode != 0:
        return NcuResult(NcuStatus.FAILED, note=f"ncu exited {done.returncode}: {tail}")
    return NcuResult(NcuStatus.NO_KERNEL, note=f"ncu profiled no kernel: {tail}")
