"""What a build may read, and which headers it must not have read.

The build (:func:`quaere.evaluate.build.build_source`) compiles the evaluator's own copy of the candidate's bytes,
in a folder made for that build, under Landlock (:mod:`quaere.runner.confine`). It reads the system and Python
folders, the toolchain's (the folders of the programs the command runs, :mod:`.toolchain`, never every ``PATH``
entry: a folder the agent put on ``PATH`` holds no header the build can read unless it holds one of those programs),
the task folder and its own folder, less:

* ``unreadable`` (the evaluator service's keys: a compiler error would quote an ``#include``\\ d key into the record);
* what any user may write beneath the system folders (:func:`~quaere.evaluate.foreign_files.writable_outside`, as
  for the runners: ``/run/lock``), where the agent, whoever it runs as, could leave a header or an ``.incbin`` blob
  that the candidate's hash does not cover.

The candidate's own folder (the workspace) is no read root. Its files can still be reached where something else
grants them (same-user mode, where the agent sets ``PATH`` and puts a program the build runs in the workspace, or
in its ``bin``), and everything is readable where Landlock is unavailable (the build then runs unconfined); the
depfile is the witness there: a header read from the candidate's folder or from a place anyone may write refuses
the build (:func:`refused_header`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from quaere.evaluate import isolation
from quaere.evaluate.foreign_files import python_needs, within, writable_outside
from quaere.evaluate.toolchain import Program


def toolchain_folders(programs: Iterable[Program]) -> list[str]:
    """Where the build's programs live besides the system folders: each one's folder, as ``PATH`` gave it and with
    links resolved, and, for one named ``bin``, the prefix above it (a toolkit keeps ``include``, ``lib`` and the
    like beside its ``bin``), unless that is the root folder."""
    folders: list[str] = []
    for program in programs:
        for entry in (os.path.dirname(program.path), os.path.dirname(program.real)):
            folders.append(entry)
            prefix = os.path.dirname(os.path.normpath(entry))
            if os.path.basename(os.path.normpath(entry)) == "bin" and prefix != os.path.dirname(prefix):  # never "/"
                folders.append(prefix)
    return list(dict.fromkeys(folders))


def shared_places(workdir: Path, scratch: Path, env: Mapping[str, str], programs: Iterable[Program]
                  ) -> tuple[str, ...]:
    """Real paths of what any user may write beneath the system read roots, but in what the build needs (its
    toolchain ``programs``, the task folder, the build cache, its Python), walked once per build."""
    needed = [*python_needs(env, sys.path, (sys.prefix, sys.base_prefix, sys.exec_prefix)),
              *(os.path.realpath(folder) for folder in (workdir, scratch.parent, *toolchain_folders(programs)))]
    return tuple(writable_outside(isolation.SYSTEM_READ_ROOTS, needed))


def read_roots(snapshot: Path, workdir: Path, scratch: Path, unreadable: Iterable[str], shared: Iterable[str],
               env: Mapping[str, str], programs: Iterable[Program]) -> tuple[str, ...]:
    """The build's read roots: the system, toolchain (:func:`toolchain_folders` of ``programs``) and Python
    folders, the task folder ``workdir`` and the snapshot's folder, less ``unreadable`` and ``shared``
    (:func:`shared_places`)."""
    return isolation.read_roots([str(snapshot)], env, str(scratch), unreadable,
                                folders=[str(workdir), *toolchain_folders(programs)], hidden=shared)


def refused_header(headers: Iterable[str], candidate: Path, workdir: Path, shared: Iterable[str]) -> str:
    """Why the build must not stand, having read ``headers`` (absolute paths, from its depfile): the first of them
    that lies in ``candidate``'s folder (unless that folder is in the task folder ``workdir``, whose files the task's
    hash covers) or in one of ``shared``; '' when none does. Either is code the candidate's hash does not cover."""
    folder = os.path.realpath(candidate.parent)
    task_folder = os.path.realpath(workdir)
    beside = not within(folder, task_folder)
    for header in headers:
        real = os.path.realpath(header)
        if beside and within(real, folder):
            return (f"the build read {header}, from the candidate's folder {folder}: a candidate is one "
                    f"self-contained source file (its sha256 covers no other file); put that code in {candidate.name}")
        place = next((place for place in shared if within(real, place)), None)
        if place is not None:
            return (f"the build read {header}, in {place}, which any user may write: a candidate is one "
                    f"self-contained source file (its sha256 covers no other file); put that code in {candidate.name}")
    return ""
