"""Which piece of the runner's sandbox makes ``cuInit`` fail when it is applied before the device is opened.

On the H200 (2026-12-03, docs/security.md, "GPU runners: host code on the CUDA driver's threads") ``cuInit`` failed
with CUDA error 304 once the runner locked itself in (no new privileges, Landlock) before opening the device.
Each variant below runs in a fresh child: it applies one piece of the policy, then opens the device as the
runner does (``cuInit``, primary context), and prints one line. The Landlock ABI passed down selects what the
ruleset handles: 3 file-system rights only, 5 also TCP, 7 also the abstract-socket and signal scopes. A child that
opened the device also names the device nodes it holds open (what Landlock's /dev rules must let the driver open).

    python scripts/probe_cuinit_sandbox.py      # on a GPU machine; a table on stdout
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import ctypes, json, os, sys
from quaere.runner import landlock, sandbox
from quaere.runner.cuda import Driver

variant = json.loads(sys.argv[1])
if variant["nnp"]:
    sandbox._prctl(sandbox.PR_SET_NO_NEW_PRIVS, 1)
if variant["abi"]:
    landlock.restrict_self(min(variant["abi"], landlock.landlock_abi()), tuple(variant["reads"]),
                           tuple(variant["writes"]))
try:
    Driver.load().primary_context(0)
    held = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            held.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the folder's own descriptor, closed by now
            pass
    held = sorted(target for target in held if target.startswith("/dev/"))
    print("ok, threads now:", sandbox.running_threads(), "device nodes held:", " ".join(held))
except Exception as exc:  # noqa: BLE001 - the point is the message
    print(f"{type(exc).__name__}: {exc}")
"""


def variants(reads: list[str], writes: list[str]) -> dict[str, dict]:
    everything = ["/"]
    return {
        "nothing": {"nnp": False, "abi": 0, "reads": [], "writes": []},
        "no new privileges": {"nnp": True, "abi": 0, "reads": [], "writes": []},
        "files only (abi 3), judge's roots": {"nnp": True, "abi": 3, "reads": reads, "writes": writes},
        "files only, reads judge's, writes everywhere": {"nnp": True, "abi": 3, "reads": reads, "writes": everything},
        "files only, reads everywhere, writes judge's": {"nnp": True, "abi": 3, "reads": everything, "writes": writes},
        "TCP too (abi 5), everything readable and writable": {"nnp": True, "abi": 5, "reads": everything,
                                                              "writes": everything},
        "scopes too (abi 7), everything readable and writable": {"nnp": True, "abi": 7, "reads": everything,
                                                                 "writes": everything},
        "the runner's policy (abi 7, judge's roots)": {"nnp": True, "abi": 7, "reads": reads, "writes": writes},
    }


def main() -> int:
    from quaere.evaluate import isolation

    scratch = tempfile.mkdtemp(prefix="quaere-probe-")
    reads = list(isolation.read_roots([], os.environ, os.getcwd()))
    writes = [scratch, "/dev"]
    env = isolation.runner_env(os.environ, Path(scratch), {})
    for name, variant in variants(reads, writes).items():
        done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(variant)], capture_output=True, text=True,
                              timeout=120, env=env, cwd=scratch)
        line = (done.stdout.strip().splitlines() or [done.stderr.strip()[-300:]])[-1]
        print(f"{name:55s} rc={done.returncode} {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
