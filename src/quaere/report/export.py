"""``quaere export``: the publication bundle of a campaign, without secrets, with a manifest of hashes.

Layout of a bundle (every path relative to its root)::

    manifest.json            sha256 of every other file, the tool version, the task, the final hash, the method
    tool.json                {"quaere_version": ...}
    kernel/<candidate>       the final kernel (the final candidate's source, byte for byte)
    candidates/<sha><sfx>    every candidate version the evaluator saw (for re-checking churn)
    ledger.jsonl             every evaluation record, secrets scrubbed
    trace.jsonl              the trace, secrets scrubbed
    questions.jsonl          the questions asked, placed and classified
    report.json              the figures of ``quaere report``
    task/                    the task folder (no caches)

JSON data goes through :func:`quaere.report.secrets.redact_data`. Files copied byte for byte (kernels, the
task) cannot be scrubbed without changing what is published, so a secret value found in one stops the
export with an error naming the file and the variable. The bundle is written to a temporary folder beside
``OUT`` and renamed at the end: a failed export leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from quaere import __version__
from quaere.evaluate.run import Progress, SilentProgress
from quaere.jsonl import read_lines
from quaere.report.campaign_report import DEFAULT_K
from quaere.report.inputs import CampaignInputs, load_inputs, load_report
from quaere.report.method_check import recorded_method
from quaere.report.questions import Catalog
from quaere.report.secrets import redact_data
from quaere.store import Store
from quaere.task.loader import resolve_task_folder
from quaere.workspace import Workspace

MANIFEST = "manifest.json"
BUNDLE_FORMAT = 1
_TASK_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".quaere")


class ExportError(RuntimeError):
    """The bundle cannot be written; the message says which file or folder and why."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_jsonl(path: Path, objects: list[Any], secrets: tuple[str, ...]) -> None:
    lines = [json.dumps(redact_data(obj, secrets), allow_nan=True) for obj in objects]
    path.write_text("".join(line + "\n" for line in lines))


def _final_source(workspace: Workspace, inputs: CampaignInputs) -> bytes:
    if inputs.final_hash is not None and inputs.final_hash in inputs.sources:
        return inputs.sources[inputs.final_hash]
    if not workspace.candidate.is_file():
        raise ExportError(f"{workspace.candidate}: the candidate file is missing and no evaluated version is stored")
    return workspace.candidate.read_bytes()


def _check_verbatim(root: Path, folders: tuple[str, ...], secrets: Mapping[str, str]) -> None:
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if not path.is_file():
                continue
            data = path.read_bytes()
            for name, value in secrets.items():
                if value.encode() in data:
                    raise ExportError(
                        f"{path.relative_to(root)} holds the value of ${name}; it is published byte for byte, "
                        "so remove the secret from it (or unset the variable if it is no secret) and export again"
                    )


def write_manifest(root: Path, fields: dict[str, Any]) -> dict[str, Any]:
    files = {
        path.relative_to(root).as_posix(): sha256_file(path)
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.relative_to(root).as_posix() != MANIFEST
    }
    manifest = {"format": BUNDLE_FORMAT, **fields, "files": files}
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


EXPORT_STEPS = 5
"""How many times :func:`_fill` advances its progress (reading, sources, ledger and trace, report, secrets)."""


def _fill(root: Path, workspace: Workspace, catalog: Catalog, secrets: Mapping[str, str], k: int,
          progress: Progress, store: Store | None) -> dict[str, Any]:
    values = tuple(secrets.values())
    inputs = load_inputs(workspace, store)
    progress.advance("workspace read")
    (root / "kernel").mkdir()
    (root / "kernel" / workspace.candidate_name).write_bytes(_final_source(workspace, inputs))
    (root / "candidates").mkdir()
    suffix = workspace.candidate.suffix
    for digest, source in inputs.sources.items():
        (root / "candidates" / f"{digest}{suffix}").write_bytes(source)
    shutil.copytree(resolve_task_folder(workspace.task), root / "task", ignore=_TASK_IGNORE)
    progress.advance(f"{len(inputs.sources)} kernel versions and the task copied")
    # The evaluations the report used: the signed store's when the workspace is registered there.
    _write_jsonl(root / "ledger.jsonl", [e.model_dump(mode="json") for e in inputs.evaluations], values)
    _write_jsonl(root / "trace.jsonl", list(read_lines(workspace.trace).objects), values)
    progress.advance("ledger and trace scrubbed")
    report = load_report(workspace, catalog, k=k, inputs=inputs)
    _write_jsonl(root / "questions.jsonl", [q.model_dump(mode="json") for q in report.questions], values)
    (root / "report.json").write_text(json.dumps(redact_data(report.model_dump(mode="json"), values), indent=1))
    (root / "tool.json").write_text(json.dumps({"quaere_version": __version__}) + "\n")
    progress.advance("report computed")
    _check_verbatim(root, ("kernel", "candidates", "task"), secrets)
    progress.advance("no secret in the verbatim files")
    return {
        "quaere_version": __version__,
        "task": workspace.task,
        "candidate_name": workspace.candidate_name,
        "final_candidate_hash": inputs.final_hash,
        "method": method.value if (method := recorded_method(inputs.events)) is not None else None,
    }


def export_bundle(
    workspace: Workspace, out: Path, catalog: Catalog, secrets: Mapping[str, str], k: int = DEFAULT_K,
    progress: Progress | None = None, store: Store | None = None,
) -> dict[str, Any]:
    """Write the bundle of ``workspace`` to ``out`` (which must not exist or be empty); return the manifest.

    ``secrets`` maps an environment variable's name to its value (see
    :func:`quaere.report.secrets.secret_values`); every value is scrubbed or, in a verbatim file, refused.
    ``progress`` is told each step (:data:`EXPORT_STEPS` of them). With ``store``, the evaluations (and
    the report's figures) are the store's signed ones (:func:`~quaere.report.inputs.load_inputs`).
    """
    progress = progress or SilentProgress()
    progress.begin("export", EXPORT_STEPS)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out}: already exists and is not an empty folder; choose a new path")
    staging = out.parent / f".{out.name}.partial"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        fields = _fill(staging, workspace, catalog, secrets, k, progress, store)
        manifest = write_manifest(staging, fields)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if out.exists():
        out.rmdir()
    staging.rename(out)
    return manifest
