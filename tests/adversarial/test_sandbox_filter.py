"""The runner's seccomp filter alone (Landlock off, as on a kernel without it), installed in a real child process:
what candidate code may still do to its own process, and what it may not do to others (the judge, here the test)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

# The probes' way to report a call: "ok" or the error's text.
OUTCOME = r"""
def outcome(call):
    try:
        call()
        return "ok"
    except OSError as exc:
        return os.strerror(exc.errno)
"""

PROBE = OUTCOME + r"""
import ctypes, fcntl, json, os, sys, termios
from quaere.runner import sandbox

parent = os.getppid()
_, terminal = os.openpty()
applied = sandbox.apply(sandbox.Policy(seccomp=True, landlock=False))
assert applied.seccomp, applied.notes
libc = ctypes.CDLL(None, use_errno=True)


cores, nice = os.sched_getaffinity(0), os.getpriority(os.PRIO_PROCESS, 0)
print(json.dumps({
    "renice_self_down": outcome(lambda: os.setpriority(os.PRIO_PROCESS, 0, nice + 1)),
    "renice_self_up": outcome(lambda: os.setpriority(os.PRIO_PROCESS, 0, -5)),
    "renice_parent": outcome(lambda: os.setpriority(os.PRIO_PROCESS, parent, nice + 1)),
    "renice_group": outcome(lambda: os.setpriority(os.PRIO_PGRP, os.getpgid(parent), nice + 1)),
    "cores_self": outcome(lambda: os.sched_setaffinity(0, cores)),
    "cores_parent": outcome(lambda: os.sched_setaffinity(parent, {min(cores)})),
    "idle_class_self": outcome(lambda: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))),
    "idle_class_parent": outcome(lambda: os.sched_setscheduler(parent, os.SCHED_IDLE, os.sched_param(0))),
    "type_into_terminal": outcome(lambda: fcntl.ioctl(terminal, termios.TIOCSTI, b"x")),
    "terminal_size": outcome(lambda: fcntl.ioctl(terminal, termios.TIOCGWINSZ, bytes(8))),
}), flush=True)
if sys.argv[1] == "sigqueue":  # a queued signal (0: only a permission check) to another process
    libc.sigqueue(parent, 0, ctypes.c_void_p(0))
else:  # the filter's last rule, after every other: this process made undumpable
    libc.prctl(4, 0, 0, 0, 0)
print("alive", flush=True)
"""

# What only a privileged process may do, from a root runner (the GPU hosts evaluate as root): a device node made in a
# folder it may write (a way round Landlock's /dev rules), the machine's host name set (to its own value), a
# userfaultfd from /dev/userfaultfd (the system call is forbidden), packet and raw IP sockets; UDP and netlink stay.
PRIVILEGED_PROBE = OUTCOME + r"""
import ctypes, fcntl, json, os, socket, sys
from quaere.runner import sandbox

if sys.argv[1] == "filter":
    applied = sandbox.apply(sandbox.Policy(seccomp=True, landlock=False))
    assert applied.seccomp, applied.notes
libc = ctypes.CDLL(None, use_errno=True)


def same_host_name():
    name = socket.gethostname().encode()
    if libc.sethostname(name, len(name)) != 0:
        raise OSError(ctypes.get_errno(), "sethostname")


def userfaultfd_by_its_device():
    os.close(fcntl.ioctl(os.open("/dev/userfaultfd", os.O_RDWR | os.O_CLOEXEC), 0xAA00, os.O_CLOEXEC))


def sockets(*args):
    socket.socket(*args).close()


node = os.path.join(sys.argv[2], "null-again")
print(json.dumps({"device_node": outcome(lambda: os.mknod(node, 0o600 | 0o020000, os.makedev(1, 3))),
                  "host_name": outcome(same_host_name), "userfaultfd": outcome(userfaultfd_by_its_device),
                  "packet_socket": outcome(lambda: sockets(socket.AF_PACKET, socket.SOCK_RAW, 0)),
                  "raw_socket": outcome(lambda: sockets(socket.AF_INET, socket.SOCK_RAW | socket.SOCK_CLOEXEC, 1)),
                  "raw_socket_v6": outcome(lambda: sockets(socket.AF_INET6, socket.SOCK_RAW, 58)),
                  "udp_socket": outcome(lambda: sockets(socket.AF_INET, socket.SOCK_DGRAM)),
                  "netlink_socket": outcome(lambda: sockets(socket.AF_NETLINK, socket.SOCK_RAW, 0))}), flush=True)
"""


def test_a_root_runner_cannot_do_what_only_root_may(tmp_path) -> None:
    def run(mode: str, folder: str) -> dict[str, str]:
        done = subprocess.run([sys.executable, "-c", PRIVILEGED_PROBE, mode, folder], capture_output=True, text=True,
                              timeout=60)
        assert done.stdout.startswith("{"), done.stderr
        return json.loads(done.stdout.splitlines()[0])

    (tmp_path / "none").mkdir()
    (tmp_path / "filter").mkdir()
    unfiltered = run("none", str(tmp_path / "none"))
    # The premise, call by call: what this machine lets an unfiltered process do (root: all of it; no IPv6: no v6).
    refused = [call for call in ("device_node", "host_name", "userfaultfd", "packet_socket", "raw_socket",
                                 "raw_socket_v6") if unfiltered[call] == "ok"]
    kept = [call for call in ("udp_socket", "netlink_socket") if unfiltered[call] == "ok"]
    if not refused:
        pytest.skip(f"not privileged here, so nothing to refuse: {unfiltered}")
    filtered = run("filter", str(tmp_path / "filter"))
    assert {call: filtered[call] for call in refused + kept} == {**dict.fromkeys(refused, os.strerror(1)),
                                                                 **dict.fromkeys(kept, "ok")}
    assert not (tmp_path / "filter" / "null-again").exists()


@pytest.fixture(scope="module")
def probe() -> tuple[dict[str, str], subprocess.CompletedProcess[str]]:
    return run_probe("sigqueue")


def run_probe(last: str) -> tuple[dict[str, str], subprocess.CompletedProcess[str]]:
    """The probe's results and its process, ended by ``last`` (a call the filter must kill it for)."""
    before = (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getaffinity(0), os.sched_getscheduler(0))
    done = subprocess.run([sys.executable, "-c", PROBE, last], capture_output=True, text=True, timeout=60)
    assert (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getaffinity(0), os.sched_getscheduler(0)) == before
    first = done.stdout.splitlines()[0] if done.stdout else ""
    assert first.startswith("{"), done.stderr
    return json.loads(first), done


def test_another_process_cannot_be_reniced_moved_to_one_core_or_to_the_idle_class(probe) -> None:
    results, _ = probe
    others = ("renice_parent", "renice_group", "cores_parent", "idle_class_parent")
    assert {k: results[k] for k in others} == dict.fromkeys(others, os.strerror(1))  # EPERM, even for root


def test_the_runner_may_lower_its_own_priority_and_keep_its_cores_but_not_rise_or_change_class(probe) -> None:
    results, _ = probe
    assert (results["renice_self_down"], results["cores_self"]) == ("ok", "ok")
    assert (results["renice_self_up"], results["idle_class_self"]) == (os.strerror(1), os.strerror(1))


def test_a_terminal_cannot_be_typed_into_but_still_answers_other_requests(probe) -> None:
    results, _ = probe
    assert (results["type_into_terminal"], results["terminal_size"]) == (os.strerror(1), "ok")


def test_a_queued_signal_to_another_process_kills_the_sender(probe) -> None:
    _, done = probe
    assert done.returncode == -signal.SIGSYS and "alive" not in done.stdout, (done.returncode, done.stdout)


def test_the_rules_after_these_still_hold() -> None:
    _, done = run_probe("dumpable")
    assert done.returncode == -signal.SIGSYS and "alive" not in done.stdout, (done.returncode, done.stdout)


def test_proc_is_granted_without_any_other_process(tmp_path) -> None:
    from quaere.runner.landlock import FILE_READ_RIGHTS, OWN_TASK_RIGHTS, READ_RIGHTS, proc_entries

    for name in ("1", "22", "4242", "4242/task", "22/task", "sys", "driver"):
        (tmp_path / name).mkdir()
    (tmp_path / "cpuinfo").write_text("")
    (tmp_path / "self").symlink_to(tmp_path / "4242")
    assert proc_entries(str(tmp_path), pid=4242) == [
        (str(tmp_path / "4242"), READ_RIGHTS), (str(tmp_path / "cpuinfo"), FILE_READ_RIGHTS),
        (str(tmp_path / "driver"), READ_RIGHTS), (str(tmp_path / "self"), READ_RIGHTS),
        (str(tmp_path / "sys"), READ_RIGHTS), (str(tmp_path / "4242" / "task"), OWN_TASK_RIGHTS)]
