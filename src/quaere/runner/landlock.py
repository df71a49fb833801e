"""Landlock, the runner's file-system confinement (unprivileged, Linux >= 5.13): reads only under the listed roots
(of ``/proc`` only the runner's own folder and what is no process's), writes only under the write roots, no TCP,
and with ABI >= 6 no signals to processes outside the sandbox.

A Landlock domain binds the thread that restricts itself and the threads it starts afterwards, never a thread that
was already running (the kernel's thread synchronisation is newer than the machines here).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
from collections.abc import Callable

# linux/landlock.h
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
SYS_LANDLOCK = (444, 445, 446)  # create_ruleset, add_rule, restrict_self (same on x86_64 and aarch64)
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
FS_ALL_V1 = (1 << 13) - 1
FS_REFER, FS_TRUNCATE = 1 << 13, 1 << 14
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is absent or disabled."""
    result = _libc().syscall(SYS_LANDLOCK[0], None, ctypes.c_size_t(0), LANDLOCK_CREATE_RULESET_VERSION)
    return max(0, int(result))


def handled_fs_rights(abi: int) -> int:
    rights = FS_ALL_V1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    return rights


PROC = "/proc"
FILE_READ_RIGHTS = FS_EXECUTE | FS_READ_FILE
# The runner's own threads' folders (/proc/<pid>/task) are also writable: the CUDA driver names its threads by
# writing /proc/<pid>/task/<tid>/comm (glibc's pthread_setname_np for another thread), and cuInit fails with error
# 304 when it may not (seen on the H200, 2026-12-03, with Landlock applied before the device was opened). A process
# may write its own threads' names and memory anyway; its process-wide files (autogroup, ...) stay read-only, and
# another process's folder out of reach.
OWN_TASK_RIGHTS = READ_RIGHTS | FS_WRITE_FILE | FS_TRUNCATE


# What only privileged readers get anything from: the kernel log, memory, the page tables' accounting, kernel
# addresses, the magic SysRq key. The capability drop already refuses them (sandbox.drop_capabilities); these rules
# are the second layer for a runner that kept a capability (a thread that ran before the drop keeps its own).
PROC_PRIVILEGED = frozenset({"kmsg", "kcore", "kallsyms", "kpagecount", "kpageflags", "kpagecgroup", "sysrq-trigger"})


def proc_entries(proc: str = PROC, pid: int | None = None) -> list[tuple[str, int]]:
    """``/proc`` as rules that leave out every other process and :data:`PROC_PRIVILEGED`: each other entry that is
    not a process id, and this process's own folder (``/proc/self``, which a rule resolves to it), to read; its
    threads' folder to read and write. Another process's folder would give its command line, environment and,
    where no Yama policy stands in the way, its memory: the evaluator service that started the judge runs as this
    runner's user and holds the signing key."""
    own = str(os.getpid() if pid is None else pid)
    rules = []
    for name in sorted(os.listdir(proc)):
        if (name.isdigit() and name != own) or name in PROC_PRIVILEGED:
            continue
        path = os.path.join(proc, name)
        rules.append((path, READ_RIGHTS if os.path.isdir(path) else FILE_READ_RIGHTS))
    tasks = os.path.join(proc, own, "task")
    if os.path.isdir(tasks):
        rules.append((tasks, OWN_TASK_RIGHTS))
    return rules


DEV = "/dev"
DEV_FILES = ("null", "zero", "full", "random", "urandom")
DEV_DRIVER_PREFIX = "nvidia"  # the NVIDIA driver's nodes and folders: nvidiactl, nvidia0, nvidia-uvm, nvidia-caps, ...
DEV_FILE_RIGHTS = FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE


def dev_entries(dev: str = DEV) -> list[tuple[str, int]]:
    """``/dev`` as rules on the nodes a runner or a build needs: the folder listed (names only), the plain data
    sources and sinks, the NVIDIA driver's nodes. The rest stays out: a process running as root (the GPU hosts
    evaluate as root) could otherwise open whatever root may, a disk, the kernel log, ``/dev/cpu``, ``kvm``,
    ``userfaultfd``. Shared memory (``/dev/shm``) stays out too: every user may write there, so a file the agent
    left in it would be a store the candidate reads past the audit, and a GPU runner does not need it (H100,
    2026-12-05: the evaluator's GPU tests and a full evaluation passed without it)."""
    rules = [(dev, FS_READ_DIR)]
    for name in sorted(os.listdir(dev)):
        path = os.path.join(dev, name)
        if name in DEV_FILES or name.startswith(DEV_DRIVER_PREFIX):
            rules.append((path, READ_RIGHTS | DEV_FILE_RIGHTS if os.path.isdir(path) else DEV_FILE_RIGHTS))
    return rules


# Folders granted entry by entry, each entry with its own rights whether the folder is named as a read or a write
# root, and whether each rule must keep its path open (procfs: see _add_rule).
PER_ENTRY: dict[str, tuple[Callable[[], list[tuple[str, int]]], bool]] = {PROC: (proc_entries, True),
                                                                          DEV: (dev_entries, False)}


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, rights: int, pin: bool = False) -> None:
    """A rule granting ``rights`` beneath ``path``. ``pin`` keeps the path open for the process's lifetime: a rule
    holds an inode, and procfs makes a new inode for a folder whose dentry was dropped, which the rule would then
    no longer match."""
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = struct.pack("=Qi", rights, fd)
        if libc.syscall(SYS_LANDLOCK[1], ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.c_char_p(rule), 0):
            raise OSError(ctypes.get_errno(), f"landlock_add_rule({path}): {os.strerror(ctypes.get_errno())}")
    finally:
        if not pin:
            os.close(fd)


def restrict_self(abi: int, read_roots: tuple[str, ...], write_roots: tuple[str, ...]) -> list[str]:
    """Restrict this thread and those it starts from now on to the roots (a read root may be a plain file); the roots
    absent here are returned."""
    libc = _libc()
    handled = handled_fs_rights(abi)
    fields = [handled]
    if abi >= 4:
        fields.append(NET_BIND_TCP | NET_CONNECT_TCP)
    if abi >= 6:
        fields.append(SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    attr = struct.pack(f"{len(fields)}Q", *fields)
    ruleset = libc.syscall(SYS_LANDLOCK[0], ctypes.c_char_p(attr), ctypes.c_size_t(len(attr)), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    skipped: list[str] = []
    try:
        expanded: set[str] = set()  # /dev is a read root and a write root: its entries' rules once
        for roots, rights in ((read_roots, READ_RIGHTS), (write_roots, handled)):
            for root in roots:
                if root in PER_ENTRY:
                    if root not in expanded:
                        expanded.add(root)
                        entries, pin = PER_ENTRY[root]
                        for entry, entry_rights in entries():
                            with contextlib.suppress(OSError):  # an entry that went away, or one the kernel won't open
                                _add_rule(libc, ruleset, entry, entry_rights & handled, pin=pin)
                elif os.path.isdir(root):
                    _add_rule(libc, ruleset, root, rights)
                elif os.path.isfile(root) and rights == READ_RIGHTS:  # on the way to a folder carved out
                    _add_rule(libc, ruleset, root, FILE_READ_RIGHTS)
                else:
                    skipped.append(root)
        if libc.syscall(SYS_LANDLOCK[2], ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    return skipped


