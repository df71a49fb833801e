"""Fixture candidates as the evaluator takes them: one self-contained source file each.

The evaluator compiles its own copy of a candidate's bytes, alone in a folder of its build (``quaere.evaluate.build``),
so an ``#include "softmax_common.h"`` of a header beside the candidate is not found, an agent's or a fixture's. The
fixtures keep one correct softmax in that header and add one misbehaviour each: :func:`self_contained` makes the
files the evaluator is handed, each quoted include of a file beside the fixture replaced by that file's text.
"""

from __future__ import annotations

import atexit
import functools
import re
import shutil
import tempfile
from pathlib import Path

_QUOTED = re.compile(r'^#include "([^"]+)"[ \t]*$', re.MULTILINE)
_ONCE = re.compile(r"^#pragma once[ \t]*\n", re.MULTILINE)  # in the main file, gcc warns about it


def self_contained(folder: Path) -> Path:
    """A folder holding every ``.cpp`` of ``folder`` with its quoted includes written out in place (paths relative
    to ``folder``), made once per process and removed when it exits."""
    return _made(folder.resolve())


@functools.cache
def _made(folder: Path) -> Path:
    out = Path(tempfile.mkdtemp(prefix=f"quaere-{folder.name}-"))
    atexit.register(shutil.rmtree, out, True)
    for source in sorted(folder.glob("*.cpp")):
        text = _QUOTED.sub(lambda match: _ONCE.sub("", (folder / match.group(1)).read_text()), source.read_text())
        (out / source.name).write_text(text)
    return out
