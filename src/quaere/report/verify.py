"""``quaere verify``: re-check a bundle's manifest, and re-run the evaluator on its final kernel.

The manifest check is exact: every listed file must exist with the listed sha256, and no file may be in
the bundle without being listed. The re-run happens where the kernel can run: always for a CPU task, and
for a CUDA task only where the evaluator sees a device (otherwise it is reported as skipped, never as
passed). It passes when the evaluator finds the kernel correct.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Protocol

from quaere.jsonl import read_json_file
from quaere.records import Evaluation
from quaere.report.export import MANIFEST, sha256_file
from quaere.task.spec import TaskError, parse_task_toml


class BundleError(ValueError):
    """The bundle has no readable manifest; the message names the file and what was expected."""


class FileIssue(str, Enum):
    CHANGED = "changed"  # present, but its sha256 differs from the manifest's
    MISSING = "missing"  # listed in the manifest, absent from the bundle
    UNLISTED = "unlisted"  # in the bundle, absent from the manifest


@dataclass(frozen=True)
class ManifestFinding:
    path: str
    issue: FileIssue


class RerunStatus(str, Enum):
    PASSED = "passed"  # the evaluator ran the kernel and found it correct
    FAILED = "failed"  # it ran and the kernel is not correct (or is not the bundled one)
    NO_DEVICE = "no_device"  # a CUDA task and no GPU here: nothing was run


@dataclass(frozen=True)
class Rerun:
    status: RerunStatus
    detail: str
    evaluation: Evaluation | None = None


class BundleEvaluator(Protocol):
    """What verify needs of the evaluator (the real one is :class:`quaere.report.rerun.QuaereEvaluator`)."""

    def device_present(self) -> bool:
        """True where CUDA kernels can run."""
        ...

    def evaluate(self, task_folder: Path, kernel: Path, workdir: Path) -> Evaluation:
        """Build, audit, check and time ``kernel`` for the task in ``task_folder``, working in ``workdir``."""
        ...


def read_manifest(bundle: Path) -> dict:
    path = bundle / MANIFEST
    manifest = read_json_file(path, BundleError, f"no such file (is {bundle} a bundle written by quaere export?)")
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise BundleError(f"{path}: field 'files' must map each relative path to its sha256")
    return manifest


def check_manifest(bundle: Path) -> tuple[ManifestFinding, ...]:
    """Every difference between the bundle's files and its manifest, sorted by path."""
    listed: dict[str, str] = read_manifest(bundle)["files"]
    findings = []
    for rel, digest in listed.items():
        path = bundle / rel
        if not path.is_file():
            findings.append(ManifestFinding(rel, FileIssue.MISSING))
        elif sha256_file(path) != digest:
            findings.append(ManifestFinding(rel, FileIssue.CHANGED))
    for path in bundle.rglob("*"):
        rel = path.relative_to(bundle).as_posix()
        if path.is_file() and rel != MANIFEST and rel not in listed:
            findings.append(ManifestFinding(rel, FileIssue.UNLISTED))
    return tuple(sorted(findings, key=lambda f: f.path))


def rerun_final_kernel(bundle: Path, evaluator: BundleEvaluator) -> Rerun:
    """Evaluate the bundle's final kernel with its own task folder, where it can run."""
    manifest = read_manifest(bundle)
    task_folder = bundle / "task"
    try:
        spec = parse_task_toml(task_folder / "task.toml")
    except TaskError as exc:
        return Rerun(RerunStatus.FAILED, str(exc))
    if spec.device == "cuda" and not evaluator.device_present():
        return Rerun(RerunStatus.NO_DEVICE, "CUDA task and no GPU here: the manifest was checked, nothing was run")
    kernel = bundle / "kernel" / str(manifest.get("candidate_name", ""))
    if not kernel.is_file():
        return Rerun(RerunStatus.FAILED, f"{kernel}: the final kernel named by the manifest is missing")
    with tempfile.TemporaryDirectory(prefix="quaere-verify-") as workdir:
        try:
            evaluation = evaluator.evaluate(task_folder, kernel, Path(workdir))
        except TaskError as exc:  # the bundled task does not load here (e.g. its module fails to import)
            return Rerun(RerunStatus.FAILED, str(exc))
    expected = manifest.get("final_candidate_hash")
    if expected and evaluation.candidate_hash != expected:
        return Rerun(RerunStatus.FAILED, f"evaluated {evaluation.candidate_hash[:12]}, manifest says {expected[:12]}",
                     evaluation)
    if not evaluation.correct:
        failing = ", ".join(v.scenario_id for v in evaluation.failing()) or "build or audit"
        return Rerun(RerunStatus.FAILED, f"the final kernel is not correct here: {failing}", evaluation)
    passed = len(evaluation.correctness)
    return Rerun(RerunStatus.PASSED, f"correct on all {passed} correctness scenarios", evaluation)
