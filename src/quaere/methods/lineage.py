"""The lineage of kernel versions: every evaluated candidate with its record, its parent and its diff.

Versions are numbered ``v1, v2, ...`` in the order the evaluator first saw them (the ledger's order). The
parent of a new version is the version the agent was working from: the last one evaluated, unless the
agent branched since (``quaere tool lineage checkout vN``, logged in ``.quaere/tooled/branches.jsonl``).
Sources are the copies the evaluator keeps in ``.quaere/candidates/``. A checkout never loses work: a
current file the evaluator never saw is stashed under ``.quaere/tooled/stash/`` first.
"""

from __future__ import annotations

import difflib
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from quaere.jsonl import append_line, read_lines
from quaere.methods.supervisor import failure_of
from quaere.records import Evaluation
from quaere.workspace import Workspace, content_hash

MIN_PREFIX = 6  # a hash prefix names a version from this many characters on


class LineageError(ValueError):
    """A version name that names nothing, or a version whose source is not kept; the message says which."""


class Version(BaseModel):
    """One evaluated candidate and where it came from."""

    model_config = ConfigDict(frozen=True)
    name: str  # v1, v2, ...
    candidate_hash: str
    parent: str | None  # the parent's name; None for the first version
    evaluations: int  # how many times the evaluator ran it
    correct: bool  # by its latest evaluation
    geomean_ratio: float | None  # latest evaluation's geomean over the goal baseline (None: nothing timed)
    failure: str | None  # latest evaluation's failure signature (None: it passed)


class Checkout(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    ts: float
    candidate_hash: str
    stashed: str | None = None  # path of the unevaluated file set aside, if any


@dataclass(frozen=True)
class CheckoutResult:
    version: Version
    stashed: Path | None


def tooled_dir(workspace: Workspace) -> Path:
    """The tooled arm's own files; the agent writes here through ``quaere tool`` (it could by hand, too)."""
    return workspace.state / "tooled"


def read_checkouts(workspace: Workspace) -> tuple[Checkout, ...]:
    objects = read_lines(tooled_dir(workspace) / "branches.jsonl").objects
    return tuple(Checkout.model_validate(o) for o in objects if isinstance(o, dict))


def build_lineage(
    evaluations: Sequence[Evaluation], checkouts: Sequence[Checkout], ratio: Callable[[Evaluation], float | None]
) -> tuple[Version, ...]:
    """The versions in first-evaluation order; evaluations and checkouts are merged by time."""
    steps: list[tuple[float, int, Evaluation | Checkout]] = [(e.created_at, 0, e) for e in evaluations]
    steps += [(c.ts, 1, c) for c in checkouts]
    names: dict[str, str] = {}
    parents: dict[str, str | None] = {}
    latest: dict[str, Evaluation] = {}
    counts: dict[str, int] = {}
    base: str | None = None
    for _, _, step in sorted(steps, key=lambda s: (s[0], s[1])):
        digest = step.candidate_hash
        if isinstance(step, Evaluation):
            if digest not in names:
                names[digest] = f"v{len(names) + 1}"
                parents[digest] = names.get(base) if base else None
            latest[digest] = step
            counts[digest] = counts.get(digest, 0) + 1
        if digest in names:
            base = digest
    return tuple(
        Version(name=names[h], candidate_hash=h, parent=parents[h], evaluations=counts[h],
                correct=latest[h].correct, geomean_ratio=ratio(latest[h]), failure=failure_of(latest[h]))
        for h in names
    )


def find_version(versions: Sequence[Version], name: str) -> Version:
    """The version called ``name`` (``v3``) or whose hash starts with ``name``."""
    for version in versions:
        if version.name == name:
            return version
    matches = [v for v in versions if len(name) >= MIN_PREFIX and v.candidate_hash.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    known = f"v1..v{len(versions)}" if versions else "none yet: run quaere eval first"
    raise LineageError(f"no version '{name}' in the lineage (versions: {known})")


def source_of(workspace: Workspace, version: Version) -> bytes:
    matches = sorted(workspace.candidates_dir.glob(f"{version.candidate_hash}*"))
    if not matches:
        raise LineageError(f"{version.name}: its source is not kept in {workspace.candidates_dir}")
    return matches[0].read_bytes()


def diff(workspace: Workspace, old: Version | None, new: Version) -> str:
    """Unified diff from ``old`` (None: an empty file) to ``new``."""
    before = source_of(workspace, old).decode(errors="replace") if old is not None else ""
    after = source_of(workspace, new).decode(errors="replace")
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=old.name if old else "(nothing)", tofile=new.name)
    return "".join(lines)


def checkout(workspace: Workspace, versions: Sequence[Version], name: str, now: float | None = None) -> CheckoutResult:
    """Make ``name``'s source the current candidate and log the branch point (stashing unevaluated work)."""
    version = find_version(versions, name)
    source = source_of(workspace, version)
    stashed: Path | None = None
    current = workspace.candidate
    if current.is_file() and content_hash(current) not in {v.candidate_hash for v in versions}:
        stash = tooled_dir(workspace) / "stash"
        stash.mkdir(parents=True, exist_ok=True)
        stashed = stash / f"{content_hash(current)}{current.suffix}"
        shutil.copyfile(current, stashed)
    current.write_bytes(source)
    record = Checkout(ts=time.time() if now is None else now, candidate_hash=version.candidate_hash,
                      stashed=str(stashed) if stashed else None)
    append_line(tooled_dir(workspace) / "branches.jsonl", record.model_dump(mode="json"))
    return CheckoutResult(version, stashed)
