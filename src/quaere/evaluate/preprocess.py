"""The candidate's source as the compiler reads it: its own lines after the preprocessor, for the audit's text rules.

The text rules (:mod:`.source_scan`) read what the candidate wrote, so a name built by the preprocessor never shows
there: ``GLUE(cuModule, LoadData)`` with ``#define GLUE(a, b) a##b``, or ``STR(...)`` around it for an entry-point
lookup, or a header macro. The build command, run again with ``-E`` in the same confinement, writes the translation
unit; the lines its markers attribute to the candidate's file, at their line numbers there, are what the compiler saw
of it, with every macro expanded. Headers' own lines are left out (``cuda.h`` declares every loader). Adjacent string
literals stay apart here (the compiler joins them later): :mod:`.spelled` reads them joined, in both texts.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

PREPROCESSED_NAME = "source.ii"
"""The preprocessed translation unit, kept beside the artifact in the build's folder."""

# Options that make the command link, name its output or write dependencies: each dropped with its value.
_WITH_VALUE = frozenset({"-o", "--output-file", "-MF", "-MT", "-MQ", "--dependency-output", "-odir",
                         "--output-directory"})
_ALONE = frozenset({"-MD", "-MMD", "-M", "-MM", "-MP", "-shared", "--shared", "-c", "--compile",
                    "--generate-dependencies", "--generate-nonsystem-dependencies",
                    "--generate-dependencies-with-compile", "--generate-nonsystem-dependencies-with-compile"})
_SHELL = frozenset({"&&", "||", ";", "|", "&", ">", "<", ">>"})
_MARKER = re.compile(r'^#(?:line)?\s+(\d+)\s+"((?:\\.|[^"\\])*)"')


class NotPreprocessable(ValueError):
    """The build command is not one compiler invocation whose options can be turned into ``-E``."""


def preprocess_command(command: str, output: Path) -> str:
    """``command`` (the rendered build command) made to write its preprocessed translation unit to ``output``:
    the dependency, link and output options dropped, ``-E -o output`` added."""
    words = shlex.split(command)
    if not words or _SHELL.intersection(words):
        raise NotPreprocessable(f"not one compiler invocation: {command!r}")
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in _WITH_VALUE:
            skip = True
        elif word not in _ALONE and not word.startswith(("-MF", "-MT", "-MQ", "--output-file=")):
            kept.append(word)
    return shlex.join([*kept, "-E", "-o", str(output)])


def own_lines(preprocessed: str) -> str:
    """The lines of ``preprocessed`` its line markers attribute to the main file (the first one they name that is not
    ``<built-in>`` or the like: a cached translation unit may come from another file of the same bytes), each at its
    line number there (lines the expansion split are joined; lines with none are empty), so a text rule's hit names
    the source line.

    The markers are trusted, which holds only because the candidate writes none: a ``#line 1 "/usr/include/x.h"``
    of its own would make its next lines a header's here, unread. The audit rule ``source_line_markers`` fails any
    ``#line`` or GNU marker in the source as written, on every task; no macro can make a directive, so the text as
    written holds them all. A header's markers can hide the includer's next lines too (a ``# 1 "x.h" 1`` it never
    closes: GCC then marks the return to the header, not to the main file), so they are trusted as the header is:
    on a task that bans something every header comes from the toolchain or the task (``includes_outside_roots``).
    """
    target = ""
    found: dict[int, list[str]] = {}
    current, number = "", 0
    for raw in preprocessed.splitlines():
        marker = _MARKER.match(raw)
        if marker:
            number, current = int(marker.group(1)), os.path.normpath(marker.group(2).replace("\\\\", "\\"))
            if not target and not current.startswith("<"):
                target = current
            continue
        if current == target and raw.strip():
            found.setdefault(number, []).append(raw)
        number += 1
    if not found:
        return ""
    return "\n".join(" ".join(found.get(line, ())) for line in range(1, max(found) + 1))
