"""The runner's seccomp filter as a classic BPF program: which system calls kill the process, which answer EPERM
(or ENOSYS), and which pass. Pure: :func:`seccomp_program` returns the bytes, tested without installing them;
:mod:`quaere.runner.sandbox` installs them on every thread once the device is open. Each group of calls below says
why it is refused."""

from __future__ import annotations

import struct

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
# addresses (with no capability left, see sandbox.drop_capabilities, it can only read). Every other family is EPERM: the
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
