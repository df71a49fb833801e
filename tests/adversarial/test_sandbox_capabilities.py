"""A root runner's capabilities (the GPU hosts evaluate as root): :func:`quaere.runner.sandbox.lock_files` drops
them all, for the thread that locks itself in and every thread started after it (the CUDA driver's). Under the
whole sandbox a root runner added an address to the machine's loopback interface through netlink
(CAP_NET_ADMIN) and read the kernel log from ``/proc/kmsg`` (CAP_SYSLOG), 2026-12-05. Each probe is a real child
process, with Landlock and seccomp left out: what is tested is the capability drop alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .test_sandbox_filter import OUTCOME

PROBE = OUTCOME + r"""
import json, os, sys, threading
from quaere.runner import sandbox

mode, folder = sys.argv[1], sys.argv[2]
FIELDS = ("CapEff", "CapPrm", "CapBnd", "CapAmb")


def capabilities():
    with open("/proc/thread-self/status") as handle:
        return {k: v.strip() for k, _, v in (line.partition(":") for line in handle) if k in FIELDS}


def in_a_thread(call):
    seen = []
    thread = threading.Thread(target=lambda: seen.append(call()))
    thread.start()
    thread.join()
    return seen[0]


stop = threading.Event()
if mode == "earlier":  # a thread running before the drop: it keeps its capabilities, and the record says so
    earlier = threading.Thread(target=stop.wait)
    earlier.start()
applied = None
if mode != "none":
    applied = sandbox.lock_files(sandbox.Policy(seccomp=True, landlock=False))
someone_elses = os.path.join(folder, "someone-elses")
print(json.dumps({
    "applied": applied and {"dropped": applied.capabilities_dropped, "notes": applied.notes},
    "this_thread": capabilities(), "later_thread": in_a_thread(capabilities),
    "kernel_log": in_a_thread(lambda: outcome(lambda: os.close(os.open("/proc/kmsg", os.O_RDONLY)))),
    "give_a_file_away": outcome(lambda: os.chown(os.path.join(folder, "mine"), 65534, 65534)),
    "read_a_file_of_another_user": outcome(lambda: os.close(os.open(someone_elses, os.O_RDONLY))),
}), flush=True)
stop.set()
"""
NONE = dict.fromkeys(("CapEff", "CapPrm", "CapBnd", "CapAmb"), "0000000000000000")

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="not root here: no capability to drop")


def _probe(mode: str, folder) -> dict:
    (folder / "mine").write_text("")
    someone_elses = folder / "someone-elses"
    someone_elses.write_text("private")
    someone_elses.chmod(0o600)
    if os.geteuid() == 0:
        os.chown(someone_elses, 65534, 65534)
    done = subprocess.run([sys.executable, "-c", PROBE, mode, str(folder)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("{"), (done.returncode, done.stderr)
    return json.loads(done.stdout.splitlines()[0])


@needs_root
def test_a_root_runner_keeps_no_capability_in_any_thread(tmp_path) -> None:
    unlocked = _probe("none", tmp_path)
    assert unlocked["this_thread"]["CapEff"] != NONE["CapEff"]  # the premise: root holds capabilities here
    assert (unlocked["kernel_log"], unlocked["give_a_file_away"], unlocked["read_a_file_of_another_user"]) == \
        ("ok", "ok", "ok")
    locked = _probe("locked", tmp_path)
    assert locked["applied"] == {"dropped": True, "notes": []}
    assert locked["this_thread"] == NONE and locked["later_thread"] == NONE
    # What those capabilities gave: the kernel log (CAP_SYSLOG, from a thread started afterwards, as the driver's
    # are), another user's file (CAP_CHOWN), permissions overridden (CAP_DAC_OVERRIDE).
    assert (locked["kernel_log"], locked["give_a_file_away"], locked["read_a_file_of_another_user"]) == \
        (os.strerror(1), os.strerror(1), os.strerror(13))


@needs_root
def test_a_thread_running_before_the_drop_is_named_and_nothing_is_claimed(tmp_path) -> None:
    result = _probe("earlier", tmp_path)
    assert result["this_thread"] == NONE
    assert not result["applied"]["dropped"]
    assert any("keep theirs" in note for note in result["applied"]["notes"]), result["applied"]["notes"]


def test_a_runner_without_capabilities_locks_itself_in_all_the_same(tmp_path) -> None:
    """A runner of another user (separate-user mode) has nothing to drop, and no CAP_SETPCAP to drop its bounding
    set with: what it holds is still nothing, and the record says so."""
    if os.geteuid() == 0:
        pytest.skip("root here: see the tests above")
    locked = _probe("locked", tmp_path)
    assert locked["applied"] == {"dropped": True, "notes": []}
    assert locked["this_thread"]["CapEff"] == locked["later_thread"]["CapEff"] == NONE["CapEff"]
