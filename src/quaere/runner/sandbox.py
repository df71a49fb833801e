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
* **seccomp** (a BPF filter, irrevocable once installed): no new processes (fork, vfork, clone without
  ``CLONE_THREAD``, exec), no new threads unless the policy allows them, no ptrace or cross-process memory access,
  no io_uring (it bypasses seccomp), no signals to other processes (by any of the four calls that send one), no
  timers that would run candidate code outside its call, no ``PR_SET_DUMPABLE`` (the judge must keep reading the
  runner's maps). Such a call kills the whole process with SIGSYS: the judge names it ``sandbox_violation``.
  Refused with EPERM instead, since a library may try them: a scheduling class or real-time priority, a negative
  nice, any change to another process's priority, cores, limits or memory placement, typing into a terminal
  (``TIOCSTI``), what only a privileged process may do to the machine (device nodes, kernel modules, clocks,
  mounts, keyrings: :data:`PRIVILEGED`), System V IPC and POSIX message queues (channels to a helper process
  outside the sandbox: :data:`IPC`), a file's mode, owner, times, extended attributes and inode flags (which
  Landlock does not rule: :data:`METADATA`), and every socket but a routing netlink one (the runner's only channel
  is the judge's socket pair). ``clone3`` answers ENOSYS, so glibc falls back to ``clone``, whose flags the filter
  can read.
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
import struct
from dataclasses import dataclass, field

from quaere.runner import landlock

PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAP_SETPCAP = 8
LINUX_CAPABILITY_VERSION_3 = 0x20080522
CAP_LAST_CAP = "/proc/sys/kernel/cap_last_cap"
EINVAL = 22
PR_SET_PDEATHSIG = 1
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
PR_SET_DUMPABLE = 4
PR_SET_PTRACER = 0x59616D61
CLONE_THREAD = 0x00010000
ENOSYS = 38

RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000

# BPF opcodes (linux/filter.h)
LD_W_ABS = 0x20
JEQ_K = 0x15
JSET_K = 0x45
RET_K = 0x06

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

# Syscall numbers, (x86_64, aarch64); None where the architecture has no such call.
NR: dict[str, tuple[int | None, int | None]] = {
    "fork": (57, None), "vfork": (58, None), "execve": (59, 221), "execveat": (322, 281), "ptrace": (101, 117),
    "process_vm_readv": (310, 270), "process_vm_writev": (311, 271), "tkill": (200, 130), "pidfd_open": (434, 434),
    "pidfd_send_signal": (424, 424), "pidfd_getfd": (438, 438), "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426), "io_uring_register": (427, 427), "alarm": (37, None), "setitimer": (38, 103),
    "timer_create": (222, 107), "bpf": (321, 280), "perf_event_open": (298, 241), "userfaultfd": (323, 282),
    "unshare": (272, 97), "setns": (308, 268), "mount": (165, 40), "chroot": (161, 51), "kcmp": (312, 272),
    "process_madvise": (440, 440), "setsid": (112, 157), "setpgid": (109, 154),
    "clone": (56, 220), "clone3": (435, 435), "prctl": (157, 167), "ioctl": (16, 29),
    "kill": (62, 129), "tgkill": (234, 131), "rt_sigqueueinfo": (129, 138), "rt_tgsigqueueinfo": (297, 240),
    "sched_setparam": (142, 118), "sched_setscheduler": (144, 119), "sched_setattr": (314, 274),
    "sched_setaffinity": (203, 122), "prlimit64": (302, 261), "migrate_pages": (256, 238), "move_pages": (279, 239),
    "setpriority": (141, 140), "ioprio_set": (251, 30),
    "mknod": (133, None), "mknodat": (259, 33), "init_module": (175, 105), "finit_module": (313, 273),
    "delete_module": (176, 106), "kexec_load": (246, 104), "kexec_file_load": (320, 294), "reboot": (169, 142),
    "iopl": (172, None), "ioperm": (173, None), "swapon": (167, 224), "swapoff": (168, 225),
    "pivot_root": (155, 41), "umount2": (166, 39), "open_tree": (428, 428), "move_mount": (429, 429),
    "fsopen": (430, 430), "fsconfig": (431, 431), "fsmount": (432, 432), "fspick": (433, 433),
    "mount_setattr": (442, 442), "acct": (163, 89), "settimeofday": (164, 170), "clock_settime": (227, 112),
    "adjtimex": (159, 171), "clock_adjtime": (305, 266), "sethostname": (170, 161), "setdomainname": (171, 162),
    "syslog": (103, 116), "quotactl": (179, 60), "open_by_handle_at": (304, 265), "fanotify_init": (300, 262),
    "add_key": (248, 217), "request_key": (249, 218), "keyctl": (250, 219), "vhangup": (153, 58),
    "socket": (41, 198), "seccomp": (317, 277), "open_tree_attr": (467, 467),
    "shmget": (29, 194), "shmat": (30, 196), "shmdt": (67, 197), "shmctl": (31, 195), "semget": (64, 190),
    "semop": (65, 193), "semtimedop": (220, 192), "semctl": (66, 191), "msgget": (68, 186), "msgsnd": (69, 189),
    "msgrcv": (70, 188), "msgctl": (71, 187), "mq_open": (240, 180), "mq_unlink": (241, 181),
    "mq_timedsend": (242, 182), "mq_timedreceive": (243, 183), "mq_notify": (244, 184), "mq_getsetattr": (245, 185),
    "chmod": (90, None), "fchmod": (91, 52), "fchmodat": (268, 53), "fchmodat2": (452, 452), "chown": (92, None),
    "fchown": (93, 55), "lchown": (94, None), "fchownat": (260, 54), "utime": (132, None), "utimes": (235, None),
    "futimesat": (261, None), "utimensat": (280, 88), "setxattr": (188, 5), "lsetxattr": (189, 6),
    "fsetxattr": (190, 7), "removexattr": (197, 14), "lremovexattr": (198, 15), "fremovexattr": (199, 16),
    "setxattrat": (463, 463), "removexattrat": (466, 466), "file_setattr": (469, 469),
}
ARCHES = ("x86_64", "aarch64")
# Always forbidden (the process dies): process creation, exec, tracing, cross-process memory, io_uring, timers and
# the like.
FORBIDDEN = ("fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "tkill",
             "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
             "alarm", "setitimer", "timer_create", "bpf", "perf_event_open", "userfaultfd", "unshare", "setns", "mount",
             "chroot", "kcmp", "process_madvise", "setsid", "setpgid")
# Calls that send a signal to the process (or thread group) named by their first argument: allowed only to this
# process, else the process dies. Landlock (ABI >= 6) scopes signals too, but older kernels lack it.
SIGNALS = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
# Scheduling classes and real-time priorities, for this process or another: always EPERM (not death: a library may
# try). The judge and the trusted kernel's runner run as the candidate's user, so it could move them to the idle
# class (slower on a loaded machine, the candidate faster by comparison), and as root itself to a real-time one.
SCHEDULING = ("sched_setparam", "sched_setscheduler", "sched_setattr")
# What only a privileged process may do to the machine, always EPERM: the answer an unprivileged user gets, so no
# library a runner loads can depend on more (close to the set Docker's default profile refuses, plus device nodes).
# The GPU hosts run evaluations as root: without this, candidate code could make a device node in its scratch
# folder (done under the whole sandbox on the development machine, 2026-12-03: a way round any narrowing of
# Landlock's /dev rules), load a kernel module, set the system clock, or open a file by handle.
PRIVILEGED = ("mknod", "mknodat", "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
              "reboot", "iopl", "ioperm", "swapon", "swapoff", "pivot_root", "umount2", "open_tree", "move_mount",
              "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "acct", "settimeofday", "clock_settime",
              "adjtimex", "clock_adjtime", "sethostname", "setdomainname", "syslog", "quotactl", "open_by_handle_at",
              "fanotify_init", "add_key", "request_key", "keyctl", "vhangup", "open_tree_attr")
# System V IPC and POSIX message queues, always EPERM: channels to a process outside the sandbox that Landlock does
# not mediate. A helper the agent started before the evaluation (a SysV segment of mode 0666 works in separate-user
# mode too) took half of each call's rows through SysV shared memory and semaphores, the work then done on another
# core and out of the runner's accounted CPU time: measured at 1.3-1.9x on every configuration of cpu_softmax, audit
# clean (development machine, as root, 2026-12-05). Such a helper may also link a library the audit bans. The
# runner's only channel is the judge's socket pair; shared memory it needs comes from the judge as a memfd.
IPC = ("shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd",
       "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr")
# A file's metadata, always EPERM: Landlock rules contents and names, not modes, owners, times or extended
# attributes. The runner is the owner of what the judge's user owns (root on the GPU hosts; the keys' owner in
# separate-user mode), and an owner changes a mode without any capability: a candidate made the store's private key
# world-readable, and set the set-user-id bit on a root-owned program (development machine, as root, 2026-12-05).
# aarch64 has only the *at forms (and fchmod, fchown). The inode-flag ioctls (chattr +i and the like) are refused
# below with the other ioctls.
METADATA = ("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime", "utimes",
            "futimesat", "utimensat", "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr",
            "fremovexattr", "setxattrat", "removexattrat", "file_setattr")
# Calls that change where or within which limits the process named by their first argument (0: the caller) runs:
# EPERM on another process (a core of its own, a lower limit: the same reasons).
PLACEMENT = ("sched_setaffinity", "prlimit64", "migrate_pages", "move_pages")
# Priorities: the kind of target the first argument must name, and a mask the third argument must not set. Only
# (this kind, 0 or this process) passes: setpriority's PRIO_PROCESS is 0, and a negative nice (raising this process
# above the trusted ones, as root) is refused too; ioprio_set's IOPRIO_WHO_PROCESS is 1.
PRIORITY = {"setpriority": (0, 0x80000000), "ioprio_set": (1, 0)}
# ioctl requests refused with EPERM: typing into a terminal (TIOCSTI; allowed to root on any terminal, which the
# runner may hold open from its start, though Landlock no longer lets it open /dev/pts/*) and the console's
# TIOCLINUX, whose selection paste does the same.
TERMINAL_INPUT = (0x5412, 0x541C)
# USERFAULTFD_IOC_NEW on /dev/userfaultfd (root's by default; a descriptor opened before Landlock): the userfaultfd the
# filter forbids as a system call, by another door (a root runner got one under the whole sandbox, 2026-12-03).
USERFAULTFD_IOC_NEW = 0xAA00
# A file's inode flags and extended attributes by ioctl (FS_IOC_SETFLAGS, its 32-bit form, FS_IOC_FSSETXATTR):
# METADATA's class by another door (immutable, append-only, no-dump...).
INODE_FLAGS = (0x40086602, 0x40046602, 0x401C5820)
REFUSED_IOCTLS = (*TERMINAL_INPUT, USERFAULTFD_IOC_NEW, *INODE_FLAGS)
# socket(): only a netlink socket of the routing family, the one glibc's getifaddrs opens to read the interfaces'
# addresses (with no capability left, see drop_capabilities, it can only read). Every other family is EPERM: the
# runner's only channel is the socket pair the judge hands it, and a socket of its own would reach a process outside
# the sandbox (UDP to a local port, a Unix socket file, whose connect Landlock does not mediate, an abstract Unix
# name) or the machine's network (packet and raw sockets: every frame on the machine, forged packets). Another
# netlink protocol is refused too (NETLINK_USERSOCK is a channel between user processes). socketpair stays: a pair
# within the process.
AF_NETLINK, NETLINK_ROUTE = 16, 0
EPERM = 1


def syscall_numbers(arch: str, names: tuple[str, ...]) -> list[int]:
    """The numbers of ``names`` on ``arch`` (one of :data:`ARCHES`), leaving out the calls it does not have."""
    column = ARCHES.index(arch)
    return [nr for nr in (NR[name][column] for name in names) if nr is not None]


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


def _stmt(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _arg_low(index: int) -> int:
    return 16 + 8 * index  # offsetof(struct seccomp_data, args[index]), little-endian low word


def seccomp_program(arch: str, pid: int, threads: bool) -> bytes:
    """The filter as raw ``sock_filter`` structs (pure; tested without installing it)."""
    if arch not in AUDIT_ARCH:
        raise OSError(f"no seccomp policy for architecture {arch}")
    column = ARCHES.index(arch)
    nr = {name: number for name, numbers in NR.items() if (number := numbers[column]) is not None}
    kill, allow = _stmt(RET_K, RET_KILL_PROCESS), _stmt(RET_K, RET_ALLOW)
    body = [_stmt(LD_W_ABS, 4), _stmt(JEQ_K, AUDIT_ARCH[arch], 1, 0), kill, _stmt(LD_W_ABS, 0)]
    if arch == "x86_64":  # the x32 ABI numbers syscalls from 0x40000000: refuse it whole
        body += [_stmt(0x35, 0x40000000, 0, 1), kill]  # JGE
    for number in syscall_numbers(arch, FORBIDDEN):
        body += [_stmt(JEQ_K, number, 0, 1), kill]
    body += [_stmt(JEQ_K, nr["clone3"], 0, 1), _stmt(RET_K, RET_ERRNO | ENOSYS)]
    # clone: a thread (CLONE_THREAD set) when allowed, nothing else.
    thread_action = allow if threads else kill
    body += [_stmt(JEQ_K, nr["clone"], 0, 4), _stmt(LD_W_ABS, _arg_low(0)), _stmt(JSET_K, CLONE_THREAD, 0, 1),
             thread_action, kill]
    # Signals: only to this process (the first argument is its pid or thread-group id).
    for number in syscall_numbers(arch, SIGNALS):
        body += [_stmt(JEQ_K, number, 0, 4), _stmt(LD_W_ABS, _arg_low(0)), _stmt(JEQ_K, pid, 0, 1), allow, kill]
    body += _refusals(arch, nr, pid)
    # prctl: never make this process undumpable or name a ptracer.
    body += [_stmt(JEQ_K, nr["prctl"], 0, 5), _stmt(LD_W_ABS, _arg_low(0)), _stmt(JEQ_K, PR_SET_DUMPABLE, 2, 0),
             _stmt(JEQ_K, PR_SET_PTRACER, 1, 0), allow, kill]
    body.append(allow)
    return b"".join(body)


def _refusals(arch: str, nr: dict[str, int], pid: int) -> list[bytes]:
    """The EPERM rules: scheduling classes, privileged calls, System V and POSIX IPC, a file's metadata, other
    processes' placement and priority, sockets other than routing netlink, typing into a terminal, a userfaultfd
    through its device, inode flags. Each block starts on the syscall number in the accumulator and returns, so the
    next block sees it too."""
    allow, deny = _stmt(RET_K, RET_ALLOW), _stmt(RET_K, RET_ERRNO | EPERM)
    body: list[bytes] = []
    for number in syscall_numbers(arch, SCHEDULING + PRIVILEGED + IPC + METADATA):
        body += [_stmt(JEQ_K, number, 0, 1), deny]
    for number in syscall_numbers(arch, PLACEMENT):  # the target in the first argument: 0 or this process
        body += [_stmt(JEQ_K, number, 0, 5), _stmt(LD_W_ABS, _arg_low(0)), _stmt(JEQ_K, 0, 1, 0),
                 _stmt(JEQ_K, pid, 0, 1), allow, deny]
    for name, (kind, refused) in PRIORITY.items():  # (kind, target, value): this kind, 0 or this process
        body += [_stmt(JEQ_K, nr[name], 0, 9), _stmt(LD_W_ABS, _arg_low(0)), _stmt(JEQ_K, kind, 0, 6),
                 _stmt(LD_W_ABS, _arg_low(1)), _stmt(JEQ_K, 0, 1, 0), _stmt(JEQ_K, pid, 0, 3),
                 _stmt(LD_W_ABS, _arg_low(2)), _stmt(JSET_K, refused, 1, 0), allow, deny]
    # socket(family, type, protocol): AF_NETLINK with NETLINK_ROUTE, nothing else.
    body += [_stmt(JEQ_K, nr["socket"], 0, 6), _stmt(LD_W_ABS, _arg_low(0)), _stmt(JEQ_K, AF_NETLINK, 0, 3),
             _stmt(LD_W_ABS, _arg_low(2)), _stmt(JEQ_K, NETLINK_ROUTE, 0, 1), allow, deny]
    body += [_stmt(JEQ_K, nr["ioctl"], 0, 2 + 2 * len(REFUSED_IOCTLS)), _stmt(LD_W_ABS, _arg_low(1))]
    for request in REFUSED_IOCTLS:
        body += [_stmt(JEQ_K, request, 0, 1), deny]
    return [*body, allow]


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
