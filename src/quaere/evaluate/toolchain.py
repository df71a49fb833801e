"""The exact programs a build command runs: resolved once on the build's ``PATH``, hashed, keyed and recorded.

The build command names its compiler (``c++``, ``nvcc``), which the shell looks up on ``PATH``; in same-user mode
the agent sets that ``PATH``, so a ``c++`` of its own first there would compile whatever it likes (another source
in place of the candidate, the trusted initial kernel at ``-O0``). The build cache is keyed on the identity of every
program the command would run (:func:`resolve`: each one's path on ``PATH``, its real path and its sha256), and the
build's record names them: the same command and source built with other compilers is another build, never a cache
hit, and quaere's own confirmation (run with its own ``PATH``) rebuilds both kernels with its own compilers.

The programs are every command word of the template that ``PATH`` holds (the first one must: a build whose
compiler cannot be found fails, naming it and the ``PATH`` searched), and those the compiler itself looks up on
``PATH``: the assembler and linker that gcc runs (``as``, ``ld``, and ``real-ld``/``collect-ld``, which collect2
prefers), and nvcc's host compilers (``gcc``, ``g++``, or the one ``-ccbin`` names). Programs a compiler finds by
its own installation's paths (``cc1plus``, ``cicc``, ``ptxas``) are not hashed: they change only with that
installation, whose files the agent cannot write unless it can write the compiler itself.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
from dataclasses import dataclass

ASSEMBLER_AND_LINKER = ("as", "ld", "real-ld", "collect-ld")
NVCC_HOST_COMPILERS = ("gcc", "g++")
_CCBIN = ("-ccbin", "--compiler-bindir")
_OPERATORS = frozenset("&|;()<>")

_hashes: dict[tuple[str, int, int, int], str] = {}


class Unresolved(ValueError):
    """The build command's program is not on the build's ``PATH``."""


@dataclass(frozen=True)
class Program:
    """One program a build runs: ``name`` as the command says it, ``path`` where ``PATH`` finds it, ``real`` that
    path with links resolved, and the sha256 of its bytes."""

    name: str
    path: str
    real: str
    sha256: str

    def described(self) -> str:
        """``path sha256[:12]`` (``path -> real sha256[:12]`` for a link), as the build's record names it."""
        shown = self.path if self.real == self.path else f"{self.path} -> {self.real}"
        return f"{shown} {self.sha256[:12]}"


def command_words(template: str) -> tuple[str, ...]:
    """The words of ``template`` that a shell would run as programs: the first, and each after an operator
    (``&&``, ``;``, ``|``, ``(``...); variable assignments before a command are skipped."""
    lexer = shlex.shlex(template, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    expecting = True
    for token in lexer:
        if token and set(token) <= _OPERATORS:
            expecting = True
        elif expecting and "=" in token and not token.startswith("="):
            continue  # NAME=value before the program
        elif expecting:
            words.append(token)
            expecting = False
    return tuple(dict.fromkeys(words))


def _host_compilers(template: str) -> tuple[str, ...]:
    """What nvcc in ``template`` uses for host code: ``-ccbin``'s value (a program, or a folder holding
    gcc/g++), else gcc and g++ from ``PATH``."""
    words = shlex.split(template)
    for index, word in enumerate(words):
        for flag in _CCBIN:
            if word == flag and index + 1 < len(words):
                value = words[index + 1]
            elif word.startswith(flag + "="):
                value = word.partition("=")[2]
            else:
                continue
            if os.path.isdir(value):
                return tuple(os.path.join(value, name) for name in NVCC_HOST_COMPILERS)
            return (value,)
    return NVCC_HOST_COMPILERS


def sha256_of(path: str) -> str:
    """The sha256 of the file at ``path`` (a real path), remembered within this process while its inode, size and
    mtime are unchanged (a compiler is read once per process, not once per build)."""
    stat = os.stat(path)
    key = (path, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    if key not in _hashes:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _hashes[key] = digest.hexdigest()
    return _hashes[key]


def _find(name: str, search: str) -> Program | None:
    found = shutil.which(name, path=search)
    if found is None:
        return None
    path = os.path.abspath(found)
    real = os.path.realpath(path)
    try:
        return Program(name, path, real, sha256_of(real))
    except OSError:
        return None


def resolve(template: str, search: str) -> tuple[Program, ...]:
    """Every program the build command ``template`` runs, found on ``search`` (the build's ``PATH``), in a fixed
    order (the command's words, then those its compilers look up). Raises :class:`Unresolved` when its first word
    is not found there; the others are left out when ``PATH`` holds none (a shell builtin such as ``test``, or a
    helper the compiler finds elsewhere)."""
    words = command_words(template)
    if not words:
        raise Unresolved(f"the build command {template!r} names no program")
    first = _find(words[0], search)
    if first is None:
        raise Unresolved(f"the build command's program {words[0]!r} was not found on the build's PATH "
                         f"({search or 'empty'})")
    names = [*words[1:], *ASSEMBLER_AND_LINKER]
    if any(os.path.basename(word) == "nvcc" for word in words):
        names += _host_compilers(template)
    found = [first, *(program for name in dict.fromkeys(names) if (program := _find(name, search)))]
    return tuple(found)


def identity(programs: tuple[Program, ...]) -> bytes:
    """The bytes that key a build on ``programs``: each one's name, path, real path and full sha256."""
    return "\n".join(f"{p.name}\0{p.path}\0{p.real}\0{p.sha256}" for p in programs).encode()
