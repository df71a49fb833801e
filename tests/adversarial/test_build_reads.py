"""The build reads only what a build needs: a candidate that ``#include``s another file makes the compiler quote it
in its error messages (below: the second line of a PEM key, named in an "undeclared" error), and the record carries
the build log's tail back to the agent. In separate-user mode the service builds as the user who owns the signing
key. The build therefore runs under Landlock (``build_reads.read_roots``). Real compiles of the CPU task's command.

And it compiles nothing but the candidate's hashed bytes (red team, round 2): the command compiles the evaluator's
own copy of them, alone in a folder, so a header beside the candidate (``#include "impl.h"``) is not found; one of
the candidate's folder read all the same (through a ``PATH`` that grants it) refuses the build, named. Either would
pool runs of different code under one hash.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from quaere.evaluate.build import build_source
from quaere.records import BuildStatus
from quaere.runner.landlock import landlock_abi
from quaere.task.loader import Task, load_task

SECRET = "MC4CAQAwBQYDK2VwBCIEIKexampleSECRETmaterial"
# Empty macros turn the PEM's armour lines into operators, so the compiler goes on to line 2 and names it.
QUOTING = """#define BEGIN
#define END
#define PRIVATE
#define KEY
int sink;
void leak() {{ sink
#include "{path}"
 sink; }}
"""

pytestmark = pytest.mark.skipif(landlock_abi() == 0, reason="Landlock unavailable on this kernel")


def _key(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / "ed25519.pem"
    key.write_text(f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n-----END PRIVATE KEY-----\n")
    return key


def _task(tmp_path: Path) -> Task:
    """A copy of the CPU task: its folder is one of the build's read roots."""
    folder = tmp_path / "task"
    shutil.copytree(load_task("cpu_softmax").folder, folder, dirs_exist_ok=True)
    return load_task(str(folder))


def _build(tmp_path: Path, key: Path, unreadable: tuple[Path, ...] = ()):
    task = _task(tmp_path)
    source = tmp_path / "workspace" / "candidate.cpp"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(QUOTING.format(path=key))
    return build_source(task.spec, source, tmp_path / "builds", task.folder, 120.0, unreadable)


def test_an_included_file_the_build_may_read_is_quoted_in_the_log(tmp_path: Path) -> None:
    """The premise: the trick works on a file the build may read (one in the task folder)."""
    build = _build(tmp_path, _key(tmp_path / "task"))
    assert build.status is BuildStatus.BUILD_FAILED
    assert SECRET in build.log_tail


@pytest.mark.parametrize("folder", ["vault", "workspace"])
def test_a_file_outside_the_builds_read_roots_cannot_be_included(folder: str, tmp_path: Path) -> None:
    """Anywhere else, the candidate's own folder included: the build compiles a copy of its bytes, elsewhere."""
    build = _build(tmp_path, _key(tmp_path / folder))
    assert build.status is BuildStatus.BUILD_FAILED
    assert SECRET not in build.log_tail and "Permission denied" in build.log_tail, build.log_tail


def test_a_folder_named_unreadable_cannot_be_included_even_from_a_read_root(tmp_path: Path) -> None:
    keys = tmp_path / "task" / "keys"
    build = _build(tmp_path, _key(keys), unreadable=(keys,))
    assert build.status is BuildStatus.BUILD_FAILED
    assert SECRET not in build.log_tail, build.log_tail


IMPL = 'extern "C" int softmax_rows(const float*, float*, int, int) { return 0; }\n'


def test_a_header_beside_the_candidate_is_not_found(tmp_path: Path) -> None:
    task = _task(tmp_path)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "impl.h").write_text(IMPL)
    (workspace / "kernel.cpp").write_text('#include "impl.h"\n')
    build = build_source(task.spec, workspace / "kernel.cpp", tmp_path / "builds", task.folder, 120.0)
    assert build.status is BuildStatus.BUILD_FAILED
    assert "impl.h: No such file or directory" in build.log_tail, build.log_tail
    assert f"{workspace / 'kernel.cpp'}:1:" in build.log_tail  # the diagnostics name the candidate, not the copy


def _passing_compiler(folder: Path) -> None:
    """A ``c++`` in ``folder`` that runs the real one: a program of the build's, so its folder is read."""
    folder.mkdir(parents=True)
    (folder / "c++").write_text(f'#!/bin/sh\nexec {shutil.which("c++")} "$@"\n')
    (folder / "c++").chmod(0o755)


def test_a_header_of_the_candidates_folder_read_all_the_same_refuses_the_build(tmp_path: Path) -> None:
    """Same-user mode: the agent sets PATH, and its own ``c++`` in a ``bin`` grants the folder above it, here the
    workspace; an ``#include`` of a file there by its absolute path then compiles, and the depfile names it."""
    task = _task(tmp_path)
    workspace = tmp_path / "workspace"
    _passing_compiler(workspace / "bin")
    (workspace / "impl.h").write_text(IMPL)
    (workspace / "kernel.cpp").write_text(f'#include "{workspace / "impl.h"}"\n')
    env = {**os.environ, "PATH": f"{workspace / 'bin'}:{os.environ['PATH']}"}
    build = build_source(task.spec, workspace / "kernel.cpp", tmp_path / "builds", task.folder, 120.0, env=env)
    assert build.status is BuildStatus.BUILD_FAILED and build.artifact == ""
    last = build.log_tail.splitlines()[-1]
    assert last.startswith(f"[quaere] refused: the build read {workspace / 'impl.h'}, from the candidate's folder"), (
        build.log_tail)
    assert not [path for path in (tmp_path / "builds").iterdir()]  # nothing cached


def test_a_header_where_anyone_may_write_refuses_the_build_where_landlock_let_it_through(tmp_path: Path) -> None:
    """The depfile's witness, for a host without Landlock (the build then runs unconfined)."""
    from quaere.evaluate.build_reads import refused_header

    candidate = tmp_path / "ws" / "kernel.cpp"
    shared = ("/run/lock",)
    assert refused_header(["/usr/include/stdio.h"], candidate, tmp_path / "task", shared) == ""
    assert "in /run/lock, which any user may write" in refused_header(["/run/lock/x.h"], candidate, tmp_path, shared)
    inside = tmp_path / "task" / "ws" / "kernel.cpp"  # a candidate in the task folder may use the task's headers
    assert refused_header([str(tmp_path / "task" / "ws" / "common.h")], inside, tmp_path / "task", shared) == ""


@pytest.mark.parametrize("tool_folder", ["tools", "tools/bin"])
def test_a_header_in_a_path_folder_that_holds_no_program_of_the_build_cannot_be_included(
        tool_folder: str, tmp_path: Path) -> None:
    """Red team, round 3 (F1): every PATH entry (and the prefix above a ``bin``) was a read root, so a header the
    agent left in any folder it put on PATH compiled into the candidate, uncovered by its hash. Only the folders
    of the programs the command runs are read now."""
    task = _task(tmp_path)
    folder = tmp_path / tool_folder
    folder.mkdir(parents=True)
    (tmp_path / "tools" / "impl.h").write_text(IMPL)
    source = tmp_path / "workspace" / "kernel.cpp"
    source.parent.mkdir()
    source.write_text(f'#include "{tmp_path / "tools" / "impl.h"}"\n')
    env = {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}
    build = build_source(task.spec, source, tmp_path / "builds", task.folder, 120.0, env=env)
    assert build.status is BuildStatus.BUILD_FAILED, build.log_tail
    assert "impl.h: Permission denied" in build.log_tail, build.log_tail


def test_the_toolchain_folders_are_the_programs_and_never_grant_the_root_folder() -> None:
    """A program in ``/bin`` grants ``/bin``, not ``/`` (whose read rule would undo every other); one in a toolkit's
    ``bin`` grants the toolkit; a link grants its target's folder too."""
    from quaere.evaluate.build_reads import toolchain_folders
    from quaere.evaluate.toolchain import Program

    programs = [Program("c++", "/bin/c++", "/bin/c++", ""),
                Program("nvcc", "/usr/local/cuda/bin/nvcc", "/usr/local/cuda-12.8/bin/nvcc", ""),
                Program("as", "/opt/tools/as", "/opt/tools/as", "")]
    assert toolchain_folders(programs) == ["/bin", "/usr/local/cuda/bin", "/usr/local/cuda",
                                           "/usr/local/cuda-12.8/bin", "/usr/local/cuda-12.8", "/opt/tools"]
