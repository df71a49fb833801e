"""``/dev`` under Landlock: the nodes a runner needs, and nothing else a root runner could open (the GPU hosts
evaluate as root), nor shared memory, where any user may leave a file for the candidate. The probe is a real child
process with Landlock alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from quaere.runner.landlock import DEV_FILE_RIGHTS, FS_READ_DIR, dev_entries, landlock_abi

PROBE = r"""
import json, os, sys
from quaere.runner import landlock, sandbox

if sys.argv[1] == "landlock":
    sandbox.no_new_privileges()
    landlock.restrict_self(landlock.landlock_abi(), ("/usr", "/etc", "/proc", "/sys", "/dev", sys.prefix,
                                                     sys.base_prefix, *sys.path[1:]), ("/dev",))


def outcome(path, flags):
    try:
        os.close(os.open(path, flags))
        return "ok"
    except OSError as exc:
        return os.strerror(exc.errno)


print(json.dumps({"null": outcome("/dev/null", os.O_WRONLY | os.O_TRUNC),
                  "urandom": outcome("/dev/urandom", os.O_RDONLY),
                  "shared_memory": outcome(sys.argv[2], os.O_CREAT | os.O_RDWR),
                  "kernel_log": outcome("/dev/kmsg", os.O_RDONLY)}), flush=True)
"""


def _probe(mode: str, shm_name: str) -> dict[str, str]:
    done = subprocess.run([sys.executable, "-c", PROBE, mode, shm_name], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path[1:])})
    assert done.stdout.startswith("{"), done.stderr
    return json.loads(done.stdout.splitlines()[0])


@pytest.mark.skipif(landlock_abi() < 3, reason="needs Landlock ABI 3")
def test_a_runner_opens_the_nodes_it_needs_and_not_the_kernel_log_or_shared_memory(tmp_path) -> None:
    shm = f"/dev/shm/quaere-test-{os.getpid()}"
    try:
        unconfined = _probe("none", shm)
        if unconfined["kernel_log"] != "ok" or unconfined["shared_memory"] != "ok":
            pytest.skip(f"/dev/kmsg or /dev/shm cannot be opened here even unconfined: {unconfined}")
        assert _probe("landlock", shm) == {"null": "ok", "urandom": "ok", "shared_memory": os.strerror(13),
                                           "kernel_log": os.strerror(13)}
    finally:
        if os.path.exists(shm):
            os.unlink(shm)


def test_dev_rules_name_only_the_listed_nodes_and_the_drivers(tmp_path) -> None:
    for name in ("null", "urandom", "nvidiactl", "nvidia0", "kmsg", "vda", "userfaultfd"):
        (tmp_path / name).write_text("")
    for name in ("shm", "nvidia-caps", "cpu", "pts"):
        (tmp_path / name).mkdir()
    rules = dict(dev_entries(str(tmp_path)))
    assert sorted(os.path.relpath(path, tmp_path) for path in rules) == [
        ".", "null", "nvidia-caps", "nvidia0", "nvidiactl", "urandom"]
    assert rules[str(tmp_path)] == FS_READ_DIR and rules[str(tmp_path / "nvidiactl")] == DEV_FILE_RIGHTS
