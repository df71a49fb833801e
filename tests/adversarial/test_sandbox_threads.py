"""Threads that run before the runner locks itself in: in a GPU runner, the CUDA driver's, on which the driver runs
host code the candidate hands it (a user object's destructor escaped that way on the H200, 2026-12-03). seccomp
binds them (TSYNC); Landlock cannot (no thread synchronisation at ABI 7), so the runner locks its files before the
driver starts them, and a thread left outside is named in the record. Each probe is a real child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from quaere.runner.landlock import landlock_abi

SECCOMP_PROBE = r"""
import json, os, sys, threading
from quaere.runner import sandbox

go, done, seen = threading.Event(), threading.Event(), {}


def earlier_thread():
    go.wait()
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))  # this thread's class: refused by the filter
        seen["batch_class"] = "ok"
    except OSError as exc:
        seen["batch_class"] = os.strerror(exc.errno)
    done.set()


threading.Thread(target=earlier_thread).start()
if sys.argv[1] == "filter":
    applied = sandbox.apply(sandbox.Policy(seccomp=True, landlock=False, threads=True))
    assert applied.seccomp, applied.notes
go.set()
done.wait()
print(json.dumps(seen), flush=True)
"""

LANDLOCK_PROBE = r"""
import json, os, sys, threading
from quaere.evaluate.isolation import read_roots
from quaere.runner import sandbox

inside, outside = sys.argv[1], sys.argv[2]
go, seen = threading.Event(), {}


def write(name):
    try:
        with open(os.path.join(outside, name), "w") as handle:
            handle.write("escaped")
        seen[name] = "written"
    except OSError as exc:
        seen[name] = os.strerror(exc.errno)


def earlier_thread():
    go.wait()
    write("earlier")


earlier = threading.Thread(target=earlier_thread)
if sys.argv[3] == "earlier":
    earlier.start()
policy = sandbox.Policy(seccomp=True, landlock=True, threads=True,
                        read_roots=read_roots([], os.environ, os.getcwd()), write_roots=(inside,))
applied = sandbox.apply(policy)
go.set()
if sys.argv[3] == "earlier":
    earlier.join()
later = threading.Thread(target=write, args=("later",))
later.start()
later.join()
print(json.dumps({"seen": seen, "notes": applied.notes, "abi": applied.landlock_abi}), flush=True)
"""


NAMING_PROBE = r"""
import ctypes, json, os, sys, threading
from quaere.evaluate.isolation import read_roots
from quaere.runner import sandbox

policy = sandbox.Policy(seccomp=True, landlock=True, threads=True,
                        read_roots=read_roots([], os.environ, os.getcwd()), write_roots=(sys.argv[1],))
applied = sandbox.apply(policy)
stop = threading.Event()
worker = threading.Thread(target=stop.wait)
worker.start()
libc = ctypes.CDLL(None, use_errno=True)
named = libc.pthread_setname_np(ctypes.c_ulong(worker.ident), b"worker")
seen = {"name_a_thread": "ok" if named == 0 else os.strerror(named)}
for key, path in (("name_the_parent", f"/proc/{os.getppid()}/comm"), ("own_process_folder", "/proc/self/comm")):
    try:
        with open(path, "w") as handle:
            handle.write("renamed")
        seen[key] = "ok"
    except OSError as exc:
        seen[key] = os.strerror(exc.errno)
stop.set()
worker.join()
print(json.dumps({"seen": seen, "abi": applied.landlock_abi}), flush=True)
"""


def _probe(source: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", source, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("{"), (done.returncode, done.stderr)
    return json.loads(done.stdout.splitlines()[0])


def test_the_filter_binds_a_thread_that_was_running_before_it() -> None:
    assert _probe(SECCOMP_PROBE, "none") == {"batch_class": "ok"}  # the premise: unfiltered, the call passes
    assert _probe(SECCOMP_PROBE, "filter") == {"batch_class": os.strerror(1)}


@pytest.fixture
def folders(tmp_path) -> tuple[str, str]:
    """The probe's scratch folder (its one write root) and a folder outside it."""
    inside, outside = tmp_path / "scratch", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    return str(inside), str(outside)


@pytest.mark.skipif(landlock_abi() == 0, reason="Landlock unavailable on this kernel")
def test_a_thread_running_before_the_sandbox_is_named_in_the_record_and_later_ones_are_confined(folders) -> None:
    result = _probe(LANDLOCK_PROBE, *folders, "earlier")
    assert result["abi"] > 0
    # The earlier thread is outside (the gap), and the record must not hide it; a thread started afterwards is in.
    assert result["seen"] == {"earlier": "written", "later": os.strerror(13)}
    assert any("outside it" in note for note in result["notes"]), result["notes"]


@pytest.mark.skipif(landlock_abi() == 0, reason="Landlock unavailable on this kernel")
def test_a_runner_alone_in_its_process_gets_no_such_note(folders) -> None:
    result = _probe(LANDLOCK_PROBE, *folders, "none")
    assert result["seen"] == {"later": os.strerror(13)}
    assert not any("outside it" in note for note in result["notes"]), result["notes"]


@pytest.mark.skipif(landlock_abi() == 0, reason="Landlock unavailable on this kernel")
def test_a_thread_can_be_named_inside_the_sandbox_and_another_process_cannot(folders) -> None:
    """The CUDA driver names its threads through /proc/<pid>/task/<tid>/comm; with /proc read-only, cuInit failed
    (error 304) once Landlock came before it (H200, 2026-12-03). The parent's folder stays out of reach, and the
    runner's process-wide files (``autogroup``, whose nice it shares with the judge, and the like) read-only."""
    result = _probe(NAMING_PROBE, folders[0])
    assert result["abi"] > 0
    assert result["seen"] == {"name_a_thread": "ok", "name_the_parent": os.strerror(13),
                              "own_process_folder": os.strerror(13)}
