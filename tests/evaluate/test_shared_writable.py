"""What any user may write beneath a runner's read roots is carved out of them (``foreign_files.writable_by_anyone``,
through ``runner_hidden``): there an agent of any user, the separate-user mode's included, could leave a library's
cubin for the candidate to read and load by hand, past the audit (``/run/lock`` on this machine; ``/dev/shm`` before
2026-12-05, when runners were granted it). The build's read roots are carved the same way (``writable_outside``,
through ``build_reads``): a header there would be compiled in though the candidate's hash does not cover it."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from quaere.evaluate import isolation
from quaere.evaluate.build import build_source
from quaere.evaluate.foreign_files import runner_hidden, writable_by_anyone
from quaere.records import BuildStatus
from quaere.runner.landlock import landlock_abi
from quaere.task.loader import load_task


def _system(root: Path) -> Path:
    """A read root holding a sticky world-writable folder with a planted blob, a world-writable file, a link to a
    world-writable folder elsewhere, and plain files beside them."""
    sys_root = root / "sys"
    for folder in ("run/lock", "run/user", "share", "carved/open"):
        (sys_root / folder).mkdir(parents=True)
    (sys_root / "run" / "lock").chmod(0o1777)
    (sys_root / "carved" / "open").chmod(0o777)
    (sys_root / "run" / "lock" / "blob.bin").write_bytes(b"cubin")
    (sys_root / "share" / "open.txt").write_text("anyone")
    (sys_root / "share" / "open.txt").chmod(0o666)
    (sys_root / "share" / "plain.txt").write_text("x")
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    elsewhere.chmod(0o777)
    (sys_root / "share" / "link").symlink_to(elsewhere)
    return sys_root


def test_world_writable_files_and_folders_are_found_and_nothing_else(tmp_path: Path) -> None:
    sys_root = _system(tmp_path)
    found = writable_by_anyone([str(sys_root)], [str(sys_root / "carved")])
    # The folder goes whole (its blob is not listed apart), the link is not followed, a carved folder not entered.
    assert sorted(found) == [str(sys_root / "run" / "lock"), str(sys_root / "share" / "open.txt")]
    assert writable_by_anyone([str(sys_root / "run" / "lock")]) == [str(sys_root / "run" / "lock")]  # a root itself
    assert writable_by_anyone([str(sys_root / "share" / "link")]) == [str(tmp_path / "elsewhere")]  # named: its target


def test_runner_hidden_walks_the_roots_it_is_given(tmp_path: Path) -> None:
    sys_root = _system(tmp_path)
    assert str(sys_root / "run" / "lock") in runner_hidden((), {}, [], (), [str(sys_root)])
    assert str(sys_root / "run" / "lock") in runner_hidden(("cublas",), {}, [], (), [str(sys_root)])
    assert str(sys_root / "run" / "lock") not in runner_hidden((), {}, [], ())
    # What the runner needs stays readable though anyone may write there, and what lies in it: its import path, its
    # libraries' folders, and the folders on the way to them.
    (sys_root / "run").chmod(0o777)
    hidden = runner_hidden((), {"LD_LIBRARY_PATH": str(sys_root / "run" / "user")}, [str(sys_root / "share")], (),
                           [str(sys_root)])
    assert [path for path in hidden if path.startswith(str(sys_root))] == [str(sys_root / "carved" / "open")]
    assert str(sys_root / "run") in runner_hidden((), {}, [], (), [str(sys_root)])


@pytest.mark.skipif(not landlock_abi(), reason="Landlock unavailable on this kernel")
def test_under_landlock_the_planted_blob_is_denied_and_its_neighbours_read(tmp_path: Path) -> None:
    sys_root = _system(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    probes = (sys_root / "run" / "lock" / "blob.bin", sys_root / "share" / "open.txt", sys_root / "share" / "plain.txt")
    lines = [f"cat {path} > /dev/null 2>&1 && echo read {path.name} || echo denied {path.name}" for path in probes]
    script = "; ".join(lines)
    for hidden, expected in (((), ["read blob.bin", "read open.txt", "read plain.txt"]),  # the premise
                             (runner_hidden((), {}, [], (), [str(sys_root)]),
                              ["denied blob.bin", "denied open.txt", "read plain.txt"])):
        roots = isolation.read_roots([], {}, "/nonexistent", folders=[str(sys_root)], hidden=hidden)
        done = subprocess.run(isolation.confined_command(script, roots, [str(scratch)]), capture_output=True,
                              text=True, timeout=60, cwd=scratch)
        assert done.stdout.split("\n")[:3] == expected, done.stdout + done.stderr


def _run_lock() -> Path:
    lock = Path("/run/lock")
    if not lock.is_dir() or not lock.stat().st_mode & stat.S_IWOTH or not os.access(lock, os.W_OK):
        pytest.skip("no world-writable /run/lock here")
    return lock


@pytest.mark.skipif(not landlock_abi(), reason="Landlock unavailable on this kernel")
@pytest.mark.parametrize("how", ["include", "incbin"])
def test_a_build_cannot_read_what_anyone_may_write(how: str, tmp_path: Path) -> None:
    """The agent leaves the kernel's code in ``/run/lock`` (under the system read root ``/run``), and the candidate
    compiles it in: its code could then change under one hash between runs. An ``#include`` is named in the depfile
    (the witness where Landlock is missing); an ``.incbin`` read by the assembler is not: only the carve stops it."""
    task = load_task("cpu_softmax")
    with tempfile.NamedTemporaryFile("w", suffix=".h", dir=_run_lock()) as shared:
        shared.write('extern "C" int softmax_rows(const float*, float*, int, int) { return 0; }\n')
        shared.flush()
        source = tmp_path / "kernel.cpp"
        source.write_text(f'#include "{shared.name}"\n' if how == "include" else
                          f'asm(".section .rodata\\n.incbin \\"{shared.name}\\"\\n.text");\n'
                          'extern "C" int softmax_rows(const float*, float*, int, int) { return 0; }\n')
        build = build_source(task.spec, source, tmp_path / "builds", task.folder, 120.0)
    # The compiler could not read it (the assembler says "file not found"), rather than the depfile's witness refusing.
    assert build.status is BuildStatus.BUILD_FAILED and "[quaere] refused" not in build.log_tail, build.log_tail
    denied = f"{shared.name}: Permission denied" if how == "include" else f"file not found: {shared.name}"
    assert denied in build.log_tail, build.log_tail
