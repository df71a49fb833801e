"""Append-only JSON-lines files that survive crashes and concurrent writers.

Each append takes an exclusive ``flock``, writes one whole line and ``fsync``s before releasing, so two
processes never interleave bytes and a record that was acknowledged is on disk. Reading tolerates a torn
last line (a writer killed mid-write): it is reported, never fatal, and never hides earlier lines.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@contextmanager
def exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` (created if needed) for a read-modify-write across
    processes; released even when the body raises."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def read_json_file(path: Path, error: type[Exception], missing: str) -> Any:
    """Parse one JSON file; a missing file raises ``error`` with ``missing`` as the reason, and a file that
    is not JSON raises ``error`` naming the file and the parser's message, never a bare traceback."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise error(f"{path}: {missing}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{path}: not valid JSON: {exc}") from None


class JsonlError(ValueError):
    """A line in the middle of a JSON-lines file is not valid JSON: the file was damaged."""


def append_line(path: Path, obj: Any) -> None:
    """Append ``obj`` as one JSON line to ``path`` with an exclusive lock and fsync."""
    line = json.dumps(obj, separators=(",", ":"), sort_keys=False, allow_nan=True) + "\n"
    data = line.encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        # A torn line left by a killed writer would glue onto ours: start on a fresh line.
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    data = b"\n" + data
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@dataclass(frozen=True)
class JsonlRead:
    """Lines that parsed, and the (line number, text) of those that did not."""

    objects: tuple[Any, ...]
    bad_lines: tuple[tuple[int, str], ...]


def read_lines(path: Path) -> JsonlRead:
    """Read every line; a line that does not parse is reported in ``bad_lines`` (1-based numbers).

    A missing file reads as empty.
    """
    if not path.exists():
        return JsonlRead((), ())
    objects: list[Any] = []
    bad: list[tuple[int, str]] = []
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                objects.append(json.loads(text))
            except json.JSONDecodeError:
                bad.append((number, text[:200]))
    return JsonlRead(tuple(objects), tuple(bad))
