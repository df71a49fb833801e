"""What the runner locks itself into before it loads the candidate: no new privileges, no capabilities, Landlock
(:mod:`quaere.runner.landlock`), seccomp.

In two steps, because each binds only some threads. :func:`lock_files` (no new privileges, no capabilities,
Landlock) comes before the runner opens the device: capabilities belong to a thread and a Landlock domain binds the
threads started after it, and the CUDA driver starts its own, on which it runs host code the candidate hands it (a
user object's destructor wrote outside the scratch folder that way on the H200, 2026-12-03, when the runner locked
itself in after opening the device). :func:`lock_syscalls` (seccomp) comes once the device is open, before the
candidate is loaded; its filter is installed with ``SECCOMP_FILTER_FLAG_TSYNC``, so it binds every thread of the
process, the driver's included.

* **capabilities** (:func:`drop_capabilities`): none left, ambient and bounding sets included. A root runner (the GPU
  hosts evaluate as root) keeps its user id, so what an owner may do to its own files, and nothing a capability
  grants: network administration through netlink, the kernel log, ``/proc/kcore``, overriding file permissions.
* **seccomp** (a BPF filter built by :mod:`quaere.runner.seccomp_filter`, irrevocable once installed): no new
  processes (fork, vfork, clone without ``CLONE_THREAD``, exec), no new threads unless the policy allows them, no
  ptrace or cross-process memory access, no io_uring (it bypasses seccomp), no signals to other processes (by any of
  the four calls that send one), no timers that would run candidate code outside its call, no ``PR_SET_DUMPABLE``
  (the judge must keep reading the runner's maps). Such a call kills the whole process with SIGSYS: the judge names
  it ``sandbox_violation``. Refused with EPERM instead, since a library may try them: a scheduling class or
  real-time priority, a negative nice, any change to another process's priority, cores, limits or memory placement,
  typing into a terminal (``TIOCSTI``), what only a privileged process may do to the machine (device nodes, kernel
  modules, clocks, mounts, keyrings: ``PRIVILEGED``), System V IPC and POSIX message queues (channels to a helper
  process outside the sandbox: ``IPC``), a file's mode, owner, times, extended attributes and inode flags (which
  Landlock does not rule: ``METADATA``), and every socket but a routing netlink one (the runner's only channel is
  the judge's socket pair). ``clone3`` answers ENOSYS, so glibc falls back to ``clone``, whose flags the filter can
  read.
* **Landlock**: reads only under the listed roots (system and Python folders, the built kernel; of ``/proc`` only
  its own folder and what is no process's), writes only under the scratch folder and, of ``/dev``, the nodes
  :func:`quaere.runner.landlock.dev_entries` names; no TCP; with
  ABI >= 6, no signals to processes outside the sandbox.

All are applied to the runner only; the judge stays outside. Where the kernel lacks one, or threads were running
before them, the runner says so and the record shows it: an evaluation never claims an isolation it did not have.
"""

from __future__ import annotations

import ctypes
import os
import platform
from dataclasses import dataclass, field

from quaere.runner import landlock
from quaere.runner.seccomp_filter import (
    PR_SET_DUMPABLE,
    SECCOMP_FILTER_FLAG_TSYNC,
    SECCOMP_SET_MODE_FILTER,
    seccomp_program,
    syscall_numbers,
)

PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAP_SETPCAP = 8
LINUX_CAPABILITY_VERSION_3 = 0x20080522
CAP_LAST_CAP = "/proc/sys/kernel/cap_last_cap"
EINVAL = 22
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Policy:
    """What the runner may do once sandboxed."""

    seccomp: bool = True
    landlock: bool = True
    threads: bool = False
    """Allow new threads (clone with CLONE_THREAD). Off: candidate code can only run inside its call."""
    read_roots: tuple[str, ...] = ()
    write_roots: tuple[str, ...] = ()


@dataclass
class Applied:
    """What is actually in force (reported to the judge and recorded in the evaluation)."""

    seccomp: bool = False
    landlock_abi: int = 0
    threads_allowed: bool = True
    capabilities_dropped: bool = False
    """No capability left to this thread and those it starts (effective, permitted, inheritable, ambient; the
    bounding set too where the process could drop it)."""
    notes: list[str] = field(default_factory=list)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> None:
    if _libc().prctl(option, ctypes.c_ulong(value), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed: {os.strerror(ctypes.get_errno())}")


def make_undumpable() -> None:
    """No process of this user may attach to this one or read its memory through ``/proc`` (the judge, which owns
    the buffers and verdicts; the evaluator service, which holds the signing key). Not for a runner: the judge reads
    its maps."""
    _prctl(PR_SET_DUMPABLE, 0)


def no_new_privileges() -> None:
    """No exec from here on may gain privileges (setuid, file capabilities); Landlock and seccomp require it."""
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _capabilities(libc: ctypes.CDLL) -> tuple[int, int, int]:
    """This thread's (effective, permitted, inheritable) sets, 64 bits each."""
    header, data = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), f"capget failed: {os.strerror(ctypes.get_errno())}")
    low, high = data
    return (low.effective | high.effective << 32, low.permitted | high.permitted << 32,
            low.inheritable | high.inheritable << 32)


def drop_capabilities() -> None:
    """Give up every capability, for this thread and the threads it starts (capabilities are per thread): the
    ambient set, the bounding set (while CAP_SETPCAP is still held; without it the process holds nothing the
    bounding set would limit, and with no new privileges no exec can gain any), then the effective, permitted and
    inheritable sets. A root runner keeps its user id and so what the owner of a file may do, nothing more: no
    network administration through netlink (a root runner added an address to ``lo`` under the whole sandbox,
    2026-12-05), no kernel log or unmasked kernel addresses from ``/proc`` (CAP_SYSLOG), no ``/proc/kcore``
    (CAP_SYS_RAWIO), no overriding of file permissions. Raises OSError when a capability is left."""
    libc = _libc()
    zero = ctypes.c_ulong(0)  # prctl reads unsigned longs, and refuses PR_CAP_AMBIENT_CLEAR_ALL with any other bits
    if libc.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), zero, zero, zero) != 0 \
            and ctypes.get_errno() != EINVAL:  # EINVAL: a kernel without ambient capabilities (< 4.3)
        raise OSError(ctypes.get_errno(), f"clearing the ambient capabilities: {os.strerror(ctypes.get_errno())}")
    effective, _, _ = _capabilities(libc)
    if effective >> CAP_SETPCAP & 1:
        with open(CAP_LAST_CAP) as handle:
            last = int(handle.read())
        for cap in range(last + 1):  # EINVAL: a capability this kernel does not know
            if libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), zero, zero, zero) != 0 \
                    and ctypes.get_errno() != EINVAL:
                raise OSError(ctypes.get_errno(), f"dropping capability {cap} from the bounding set: "
                                                  f"{os.strerror(ctypes.get_errno())}")
    header, data = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), f"capset failed: {os.strerror(ctypes.get_errno())}")
    if any(_capabilities(libc)):
        raise OSError(f"capabilities left after capset: {_capabilities(libc)}")


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies (the judge), so no runner outlives an evaluation."""
    _prctl(PR_SET_PDEATHSIG, 9)


def _install_seccomp(program: bytes, arch: str) -> None:
    """Install ``program`` on every thread of this process (TSYNC): the CUDA driver's threads, started before the
    filter, would otherwise stay outside it."""
    count = len(program) // 8
    buffer = ctypes.create_string_buffer(program, len(program))

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = Prog(count, ctypes.addressof(buffer))
    (number,) = syscall_numbers(arch, ("seccomp",))  # seccomp_program has refused an architecture not in NR
    result = _libc().syscall(number, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, ctypes.byref(prog))
    if result > 0:  # the id of a thread that could not take the filter; then no thread has it
        raise OSError(f"seccomp filter refused: thread {result} could not be synchronised")
    if result != 0:
        raise OSError(ctypes.get_errno(), f"seccomp filter refused: {os.strerror(ctypes.get_errno())}")


def running_threads() -> int:
    """How many threads this process has now."""
    return len(os.listdir("/proc/self/task"))


def lock_files(policy: Policy) -> Applied:
    """No new privileges, no capabilities and Landlock, for this thread and every thread started after it: called
    before the device is opened (see the module's docstring). A thread already running stays outside, and the record
    says so."""
    applied = Applied(threads_allowed=True)
    if not (policy.seccomp or policy.landlock):
        applied.notes.append("sandbox disabled by the evaluator's options")
        return applied
    no_new_privileges()
    earlier = running_threads() - 1
    try:
        drop_capabilities()
    except OSError as exc:
        applied.notes.append(f"capabilities not dropped: {exc}")
    else:
        applied.capabilities_dropped = earlier == 0
        if earlier > 0:
            applied.notes.append(f"{earlier} thread(s) running before the capability drop keep theirs")
    if not policy.landlock:
        return applied
    abi = landlock.landlock_abi()
    if abi == 0:
        applied.notes.append("Landlock unavailable on this kernel: file-system confinement not in force")
        return applied
    skipped = landlock.restrict_self(abi, policy.read_roots, policy.write_roots)
    applied.landlock_abi = abi
    if earlier > 0:
        applied.notes.append(f"{earlier} thread(s) running before Landlock are outside it")
    if skipped:
        applied.notes.append(f"landlock roots absent here: {', '.join(skipped)}")
    return applied


def lock_syscalls(policy: Policy, applied: Applied) -> Applied:
    """seccomp on every thread of the process (``applied`` is :func:`lock_files`'s answer, completed here): called
    once the device is open, before the candidate is loaded."""
    if policy.seccomp:
        try:
            arch = platform.machine()
            _install_seccomp(seccomp_program(arch, os.getpid(), policy.threads), arch)
        except OSError as exc:
            applied.notes.append(f"seccomp not in force: {exc}")
        else:
            applied.seccomp = True
            applied.threads_allowed = policy.threads
    return applied


def apply(policy: Policy) -> Applied:
    """Both steps at once, for a process with nothing to open in between."""
    return lock_syscalls(policy, lock_files(policy))
