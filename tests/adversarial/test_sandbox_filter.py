"""The runner's seccomp filter alone (Landlock off, as on a kernel without it, and the capabilities kept:
``lock_syscalls`` without ``lock_files``), installed in a real child process: what candidate code may still do to its
own process, and what it may not do to others (the judge, here the test)."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import stat
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
applied = sandbox.lock_syscalls(sandbox.Policy(seccomp=True, landlock=False), sandbox.Applied())
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
# userfaultfd from /dev/userfaultfd (the system call is forbidden), packet and raw IP sockets; routing netlink stays.
PRIVILEGED_PROBE = OUTCOME + r"""
import ctypes, fcntl, json, os, socket, sys
from quaere.runner import sandbox

if sys.argv[1] == "filter":
    applied = sandbox.lock_syscalls(sandbox.Policy(seccomp=True, landlock=False), sandbox.Applied())
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
    kept = [call for call in ("netlink_socket",) if unfiltered[call] == "ok"]
    if not refused:
        pytest.skip(f"not privileged here, so nothing to refuse: {unfiltered}")
    filtered = run("filter", str(tmp_path / "filter"))
    assert {call: filtered[call] for call in refused + kept} == {**dict.fromkeys(refused, os.strerror(1)),
                                                                 **dict.fromkeys(kept, "ok")}
    assert not (tmp_path / "filter" / "null-again").exists()


# Channels to a process outside the sandbox, and a file's metadata, which Landlock does not rule: System V IPC (a new
# object, and one another process made, by its id), a POSIX message queue, sockets of their own; the mode, owner,
# times, extended attributes and inode flags of a file the runner owns. Any user may do each (the premise is checked
# unfiltered).
CHANNEL_PROBE = OUTCOME + r"""
import ctypes, fcntl, json, os, socket, sys
from quaere.runner import sandbox

mode, target, segment = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "filter":
    applied = sandbox.lock_syscalls(sandbox.Policy(seccomp=True, landlock=False), sandbox.Applied())
    assert applied.seccomp, applied.notes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0


def checked(result, name):
    if result == -1 or result is None or result == ctypes.c_void_p(-1).value:
        raise OSError(ctypes.get_errno(), name)
    return result


def sysv(get, remove, *args):
    def call():
        ident = checked(get(IPC_PRIVATE, *args, IPC_CREAT | 0o600), "get")
        remove(ident, *([0] if remove is libc.semctl else []), IPC_RMID, None)
    return call


def attach_to_another_process_segment():
    libc.shmdt(ctypes.c_void_p(checked(libc.shmat(segment, None, 0), "shmat")))


def message_queue():
    name = f"/quaere-probe-{os.getpid()}".encode()
    os.close(checked(libc.mq_open(name, os.O_CREAT | os.O_RDWR, 0o600, None), "mq_open"))
    libc.mq_unlink(name)


def sockets(*args):
    socket.socket(*args).close()


def socket_pair():
    for end in socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET):
        end.close()


def xattr():
    os.setxattr(target, "user.quaere", b"x")
    os.removexattr(target, "user.quaere")


def raw(number, *args):  # the newer calls glibc may not wrap (the same numbers on x86_64 and aarch64)
    def call():
        checked(libc.syscall(number, *args), str(number))
    return call


class XattrArgs(ctypes.Structure):
    _fields_ = [("value", ctypes.c_char_p), ("size", ctypes.c_uint32), ("flags", ctypes.c_uint32)]


AT_FDCWD = -100
path = target.encode()
fchmodat2 = raw(452, AT_FDCWD, path, 0o644, 0)
setxattrat = raw(463, AT_FDCWD, path, 0, b"user.quaere", ctypes.byref(XattrArgs(b"x", 1, 0)),
                 ctypes.sizeof(XattrArgs))


def same_inode_flags():  # FS_IOC_GETFLAGS, then FS_IOC_SETFLAGS (chattr) with what it read
    flags = fcntl.ioctl(fd, 0x80086601, bytes(8))
    fcntl.ioctl(fd, 0x40086602, flags)


fd = os.open(target, os.O_RDONLY)
print(json.dumps({
    "shmget": outcome(sysv(libc.shmget, libc.shmctl, 4096)),
    "semget": outcome(sysv(libc.semget, libc.semctl, 1)),
    "msgget": outcome(sysv(libc.msgget, libc.msgctl)),
    "shmat_another_process_segment": outcome(attach_to_another_process_segment),
    "mq_open": outcome(message_queue),
    "chmod": outcome(lambda: os.chmod(target, 0o644)),
    "fchmod": outcome(lambda: os.fchmod(fd, 0o644)),
    "chown": outcome(lambda: os.chown(target, os.getuid(), os.getgid())),
    "utimensat": outcome(lambda: os.utime(target, (0, 0))),
    "setxattr": outcome(xattr),
    "inode_flags": outcome(same_inode_flags),
    "fchmodat2": outcome(fchmodat2),
    "setxattrat": outcome(setxattrat),
    "udp_socket": outcome(lambda: sockets(socket.AF_INET, socket.SOCK_DGRAM)),
    "unix_socket": outcome(lambda: sockets(socket.AF_UNIX, socket.SOCK_STREAM)),
    "netlink_usersock": outcome(lambda: sockets(socket.AF_NETLINK, socket.SOCK_RAW, 2)),
    "netlink_route": outcome(lambda: sockets(socket.AF_NETLINK, socket.SOCK_RAW, 0)),
    "socketpair": outcome(socket_pair),
}), flush=True)
"""
CHANNELS = ("shmget", "semget", "msgget", "shmat_another_process_segment", "mq_open", "udp_socket", "unix_socket",
            "netlink_usersock")
METADATA = ("chmod", "fchmod", "chown", "utimensat", "setxattr", "inode_flags", "fchmodat2", "setxattrat")
KEPT = ("netlink_route", "socketpair")


@pytest.fixture(scope="module")
def channels(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], dict[str, str], list[int]]:
    """The channel probe unfiltered and filtered, and the modes of each one's target file afterwards (0600
    before). The segment another process made is this test's own, removed afterwards."""
    libc = ctypes.CDLL(None, use_errno=True)
    segment = libc.shmget(0, 4096, 0o1000 | 0o600)
    assert segment >= 0, os.strerror(ctypes.get_errno())
    try:
        results, modes = [], []
        for mode in ("none", "filter"):
            target = tmp_path_factory.mktemp(mode) / "private-key"
            target.write_text("private")
            target.chmod(0o600)
            done = subprocess.run([sys.executable, "-c", CHANNEL_PROBE, mode, str(target), str(segment)],
                                  capture_output=True, text=True, timeout=60)
            assert done.stdout.startswith("{"), done.stderr
            results.append(json.loads(done.stdout.splitlines()[0]))
            modes.append(stat.S_IMODE(target.stat().st_mode))
    finally:
        libc.shmctl(segment, 0, None)  # IPC_RMID
    return results[0], results[1], modes


def test_no_ipc_or_socket_of_its_own_reaches_a_process_outside_the_sandbox(channels) -> None:
    """A helper the agent started before the evaluation took half of each call's rows through System V shared
    memory (1.3-1.9x, audit clean, 2026-12-05); a message queue, UDP, a Unix socket file or a user netlink socket
    would do as well."""
    unfiltered, filtered, _ = channels
    assert {call: unfiltered[call] for call in CHANNELS} == dict.fromkeys(CHANNELS, "ok")  # the premise
    assert {call: filtered[call] for call in CHANNELS} == dict.fromkeys(CHANNELS, os.strerror(1))


def test_a_files_mode_owner_times_and_attributes_cannot_be_changed(channels) -> None:
    """Landlock rules a file's contents, not its metadata: a candidate made the store's private key world-readable
    and a root-owned program set-user-id (2026-12-05)."""
    unfiltered, filtered, modes = channels
    # The last four only where the file system has them and the kernel is new enough (6.6, 6.13).
    premise = [call for call in METADATA if unfiltered[call] == "ok"]
    assert set(premise) >= {"chmod", "fchmod", "chown", "utimensat"}, unfiltered
    assert {call: filtered[call] for call in premise} == dict.fromkeys(premise, os.strerror(1))
    assert modes == [0o644, 0o600]


def test_a_routing_netlink_socket_and_a_pair_within_the_process_remain(channels) -> None:
    """glibc's getifaddrs reads the interfaces through routing netlink; a pair of sockets reaches nobody else."""
    _, filtered, _ = channels
    assert {call: filtered[call] for call in KEPT} == dict.fromkeys(KEPT, "ok")


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
    for name in ("cpuinfo", "kmsg", "kcore", "kallsyms"):  # the last three only a privileged reader gets
        (tmp_path / name).write_text("")
    (tmp_path / "self").symlink_to(tmp_path / "4242")
    assert proc_entries(str(tmp_path), pid=4242) == [
        (str(tmp_path / "4242"), READ_RIGHTS), (str(tmp_path / "cpuinfo"), FILE_READ_RIGHTS),
        (str(tmp_path / "driver"), READ_RIGHTS), (str(tmp_path / "self"), READ_RIGHTS),
        (str(tmp_path / "sys"), READ_RIGHTS), (str(tmp_path / "4242" / "task"), OWN_TASK_RIGHTS)]
