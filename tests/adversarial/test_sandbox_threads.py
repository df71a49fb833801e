"""Threads that run before the runner locks itself in: in a GPU runner, the CUDA driver's, on which the driver runs
host code the candidate hands it (a user object's destructor escaped that way on the H200, 2026-12-03). seccomp
must bind them (TSYNC); Landlock cannot (no thread synchronisation on these kernels), so the runner locks its files
before the driver starts them, and a thread left outside is named in the record. Each probe is a real child."""

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
earlier.start()
policy = sandbox.Policy(seccomp=False, landlock=True, read_roots=read_roots([], os.environ, os.getcwd()),
                        write_roots=(inside,))
applied = sandbox.lock_files(policy)
go.set()
earlier.join()
later = threading.Thread(target=write, args=("later",))
later.start()
later.join()
print(json.dumps({"seen": seen, "notes": applied.notes, "abi": applied.landlock_abi}), flush=True)
"""


def _probe(source: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", source, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("{"), (done.returncode, done.stderr)
    return json.loads(done.stdout.splitlines()[0])


def test_the_filter_binds_a_thread_that_was_running_before_it() -> None:
    assert _probe(SECCOMP_PROBE, "none") == {"batch_class": "ok"}  # the premise: unfiltered, the call passes
    assert _probe(SECCOMP_PROBE, "filter") == {"batch_class": os.strerror(1)}


@pytest.mark.skipif(landlock_abi() == 0, reason="Landlock unavailable on this kernel")
def test_a_thread_running_before_landlock_is_named_in_the_record_and_later_ones_are_confined(tmp_path) -> None:
    inside, outside = tmp_path / "scratch", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    result = _probe(LANDLOCK_PROBE, str(inside), str(outside))
    assert result["abi"] > 0
    # An earlier thread is outside the domain (why the runner locks files before it opens the device), and the
    # record must not hide it; a thread started afterwards is inside.
    assert result["seen"] == {"earlier": "written", "later": os.strerror(13)}
    assert any("left outside Landlock" in note for note in result["notes"]), result["notes"]
