"""The candidate as the evaluator takes it: a regular file of the task's source language, read once.

The bytes read here are everything the evaluation knows of the candidate: its identity (their sha256), the build's
cache key, what the compiler compiles (the build's own copy of them, :func:`quaere.evaluate.build.build_source`) and
what the audit reads. Reading the workspace file again later would let a file swapped between two reads be built
under the other one's hash.

A candidate that is not source text of the task's language is refused before any build: a link (the workspace's
``kernel.cpp`` pointing at ``blob.o``), a name with another suffix than the task's initial kernel (the build command
would link an ``x.o``, assemble an ``x.s``), or bytes that are not text (an ELF object, an ``ar`` archive, a NUL
byte, bytes that are not UTF-8). Every text rule of the audit reads source: object code would pass them all unread.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from quaere.evaluate.elf_sections import ELF_MAGIC
from quaere.task.spec import TaskSpec

AR_MAGIC = b"!<arch>\n"


@dataclass(frozen=True)
class SourceFile:
    """A candidate's bytes as read once, and why they are not kernel source ('' when they are)."""

    data: bytes
    problem: str = ""


def source_suffix(spec: TaskSpec) -> str:
    """The suffix every candidate of ``spec``'s task has: its initial kernel's (``.cpp``, ``.cu``), which picks the
    compiler's language."""
    return Path(spec.initial_kernel).suffix


def text_problem(name: str, data: bytes, suffix: str) -> str:
    """Why ``data``, a file called ``name``, is not kernel source with the suffix ``suffix``; '' when it is."""
    own = Path(name).suffix
    if own != suffix:
        return (f"{name}: the task's kernel source is a '{suffix}' file, and this one ends in "
                f"'{own or '(no suffix)'}': its build command would not compile it as source; name it *{suffix}")
    if data.startswith(ELF_MAGIC):
        return f"{name}: an ELF object (compiled code), not {suffix} source text: the candidate must be source"
    if data.startswith(AR_MAGIC):
        return f"{name}: an ar archive of compiled objects, not {suffix} source text: the candidate must be source"
    if b"\0" in data:
        return f"{name}: a NUL byte at offset {data.index(0)}: not source text"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"{name}: not UTF-8 text (byte {exc.start} cannot be decoded): not source text"
    return ""


def read_source(path: Path, suffix: str) -> SourceFile:
    """``path``'s bytes, read once through a descriptor opened without following a link, and what is wrong with them
    as a candidate of a task whose sources end in ``suffix`` (:func:`text_problem`). A link is refused, whatever it
    points at: its bytes are then the target's (when that is a regular file), so that the refused evaluation is
    recorded under the hash the goal computes for the file. Raises ``OSError`` for a missing or unreadable file."""
    try:
        # O_NONBLOCK: a FIFO named as the candidate must not hang the evaluator before it is refused.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        return SourceFile(_regular_bytes(path), f"{path}: a symbolic link (to {os.readlink(path)}); the candidate "
                                                "must be a regular file holding the kernel's source: copy it there")
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return SourceFile(b"", f"{path}: not a regular file; the candidate must be a kernel source file")
        data = handle.read()
    return SourceFile(data, text_problem(str(path), data, suffix))


def _regular_bytes(path: Path) -> bytes:
    """The bytes of what ``path`` leads to when that is a regular file, else none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as handle:
        return handle.read() if stat.S_ISREG(os.fstat(handle.fileno()).st_mode) else b""


def unlinked(path: Path) -> Path:
    """``path`` made absolute, the links among its folders resolved but not its own name: a link named as the
    candidate stays a link, for :func:`read_source` to refuse, rather than becoming the file it points at."""
    return path.absolute().parent.resolve() / path.name
