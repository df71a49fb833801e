"""The content identity of a task folder, pinned at `quaere init`.

A task's sha256 covers every file's relative path and bytes, in path order; Python's byte-code caches
(``__pycache__``, ``*.pyc``) are left out because importing the task writes them.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from quaere.store.records import TaskIdentity

_SKIPPED_DIRS = frozenset({"__pycache__"})
_SKIPPED_SUFFIXES = (".pyc",)


def task_files(folder: Path) -> list[Path]:
    """Every file of the task folder that belongs to its identity, in a fixed order."""
    files = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part in _SKIPPED_DIRS for part in relative.parts) or path.name.endswith(_SKIPPED_SUFFIXES):
            continue
        if path.is_file():
            files.append(path)
    return files


def task_digest(folder: Path) -> tuple[str, int]:
    """(sha256 over the folder's files, number of files)."""
    digest = hashlib.sha256()
    files = task_files(folder)
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        data = path.read_bytes()
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest(), len(files)


def task_identity(name: str, reference: str, folder: Path) -> TaskIdentity:
    sha256, count = task_digest(folder)
    return TaskIdentity(name=name, reference=reference, sha256=sha256, files=count)


def first_difference(folder: Path, other: Path) -> str:
    """The first file that differs between two task folders (relative path), for a refusal that names it."""
    mine = {p.relative_to(folder).as_posix(): p for p in task_files(folder)}
    theirs = {p.relative_to(other).as_posix(): p for p in task_files(other)}
    for name in sorted(set(mine) | set(theirs)):
        if name not in mine or name not in theirs or mine[name].read_bytes() != theirs[name].read_bytes():
            return name
    return ""


def copy_task(folder: Path, target: Path) -> None:
    """Copy the identity's files of ``folder`` into a fresh ``target`` (replaced atomically)."""
    scratch = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    for path in task_files(folder):
        destination = scratch / path.relative_to(folder)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    shutil.rmtree(target, ignore_errors=True)
    scratch.rename(target)
