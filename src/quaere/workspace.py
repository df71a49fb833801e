"""A workspace: a folder holding the current candidate and ``.quaere/`` (ledger copy, trace, state).

``.quaere/workspace.toml`` names the task and the candidate file. Everything here is writable by the agent,
so nothing that decides the goal is read from it: the evaluations, the pinned task and the Stop hook's
counters live in the signed store (:mod:`quaere.store`), keyed by :attr:`Workspace.id`. Every command
that acts on a campaign (eval, goal, hook, ask, run, report) finds its workspace from a folder upwards.
"""

from __future__ import annotations

import hashlib
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

STATE_DIR = ".quaere"


class WorkspaceError(ValueError):
    """No workspace, or a malformed ``.quaere/workspace.toml``."""


def content_hash(path: Path) -> str:
    """sha256 of the file's bytes: the identity of a candidate."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Workspace:
    root: Path
    task: str
    candidate_name: str

    @property
    def id(self) -> str:
        """The workspace's folder name in the evaluation store: a hash of its absolute path."""
        return hashlib.sha256(str(self.root.resolve()).encode()).hexdigest()[:24]

    @property
    def config(self) -> Path:
        return self.state / "workspace.toml"

    @property
    def state(self) -> Path:
        return self.root / STATE_DIR

    @property
    def candidate(self) -> Path:
        return self.root / self.candidate_name

    @property
    def ledger(self) -> Path:
        """An untrusted convenience copy of the evaluations; the goal reads the signed store only."""
        return self.state / "ledger.jsonl"

    @property
    def trace(self) -> Path:
        return self.state / "trace.jsonl"

    @property
    def candidates_dir(self) -> Path:
        """Every candidate version the evaluator saw, stored as ``<sha256><suffix>``."""
        return self.state / "candidates"

    @property
    def question_queue(self) -> Path:
        """Questions a person queued with ``quaere ask`` for the next stop or moment."""
        return self.state / "queue.jsonl"

    @property
    def campaign_state(self) -> Path:
        return self.state / "campaign.json"

    def keep_version(self, source: Path) -> str:
        """Store a copy of ``source`` under its hash; return the hash."""
        digest = content_hash(source)
        target = self.candidates_dir / f"{digest}{source.suffix}"
        if not target.exists():
            self.candidates_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        return digest


def _config_text(task: str, candidate: str) -> str:
    return f'task = "{task}"\ncandidate = "{candidate}"\n'


def create_workspace(root: Path, task: str, initial_kernel: Path, overwrite: bool = False) -> Workspace:
    """Make ``root`` a workspace for ``task`` with a copy of the initial kernel as the candidate."""
    root.mkdir(parents=True, exist_ok=True)
    config = root / STATE_DIR / "workspace.toml"
    if config.exists() and not overwrite:
        raise WorkspaceError(f"{config}: a workspace already exists here")
    candidate = root / initial_kernel.name
    if not candidate.exists() or overwrite:
        shutil.copyfile(initial_kernel, candidate)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(_config_text(task, initial_kernel.name))
    return Workspace(root=root.resolve(), task=task, candidate_name=initial_kernel.name)


def open_workspace(start: Path) -> Workspace:
    """Find the workspace containing ``start`` (searching parent folders)."""
    start = start.resolve()
    for folder in (start, *start.parents):
        config = folder / STATE_DIR / "workspace.toml"
        if config.exists():
            try:
                data = tomllib.loads(config.read_text())
            except tomllib.TOMLDecodeError as exc:
                raise WorkspaceError(f"{config}: not valid TOML: {exc}") from None
            for field in ("task", "candidate"):
                if not isinstance(data.get(field), str) or not data[field]:
                    raise WorkspaceError(f"{config}: field '{field}' is required (a non-empty string)")
            return Workspace(root=folder, task=data["task"], candidate_name=data["candidate"])
    raise WorkspaceError(f"{start}: not inside a quaere workspace (no {STATE_DIR}/workspace.toml here or above)")
