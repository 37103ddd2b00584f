"""The sandbox's seccomp filter: a compiled BPF program that bubblewrap loads (``--seccomp FD``)
just before it executes the interpreter (`policies.sandbox.process`).

Built with libseccomp (Debian ``libseccomp2``, the library bubblewrap's own users build their
filters with) through ctypes: five functions of its stable C API, so no binding package. The
filter allows by default and denies what a program that only computes never needs — sockets of
every family, tracing, mounting, namespaces, kernel keys, BPF, perf, other processes' memory,
kexec/reboot/modules, personality changes, userfaultfd, io_uring, terminal injection — with
``EPERM``, so a program gets a clean ``PermissionError`` rather than a kill. ``clone3`` answers
``ENOSYS`` (the C library then falls back to ``clone``, whose namespace flags are denied), and a
system call of another architecture (32-bit ``int 0x80``, x32) kills the process: those tables
would bypass the rules.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os

#: Denied with EPERM, whatever their arguments.
DENIED: tuple[str, ...] = (
    # sockets: the program needs none (not even AF_UNIX: no host socket must be reachable)
    "socket", "socketpair", "socketcall", "connect", "bind", "listen", "accept", "accept4",
    # other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    # mounts and namespaces
    "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "unshare", "setns",
    # kernel keys, BPF, perf, userfaultfd, io_uring
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    # the machine itself
    "kexec_load", "kexec_file_load", "reboot", "init_module", "finit_module", "delete_module",
    "personality", "acct", "swapon", "swapoff", "syslog", "quotactl", "quotactl_fd",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "fanotify_init", "uselib",
    "ustat", "sysfs", "_sysctl", "vhangup", "iopl", "ioperm", "modify_ldt", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "move_pages",
    "nfsservctl", "vm86", "vm86old",
)  # fmt: skip

#: clone() flags that make namespaces: denied (EPERM) when any is set.
CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)
#: ioctl requests denied: TIOCSTI (type into a terminal), TIOCLINUX.
DENIED_IOCTLS = (0x5412, 0x541C)

_ACT_ALLOW = 0x7FFF0000
_CMP_MASKED_EQ = 7
_NR_ERROR = -1


def _act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class SeccompUnavailable(RuntimeError):
    """libseccomp cannot be loaded or cannot build the filter."""


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


def _library() -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError as exc:
        raise SeccompUnavailable(f"libseccomp not found ({exc}); install libseccomp2") from None
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.restype = None
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_export_bpf.restype = ctypes.c_int
    return lib


def _rule(lib: ctypes.CDLL, ctx: int, action: int, name: str, *cmps: _ArgCmp) -> None:
    nr = lib.seccomp_syscall_resolve_name(name.encode())
    if nr == _NR_ERROR:
        return  # a name this libseccomp does not know: not a system call of any table it builds
    array = (_ArgCmp * len(cmps))(*cmps) if cmps else None
    rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), array)
    if rc < 0 and nr >= 0:  # a pseudo number (negative): absent on this architecture
        raise SeccompUnavailable(f"seccomp rule for {name}: {os.strerror(-rc)}")


@functools.cache
def filter_program() -> bytes:
    """The compiled filter (classic BPF, as ``--seccomp`` reads it), built once per process.
    Raises `SeccompUnavailable`."""
    lib = _library()
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        deny = _act_errno(errno.EPERM)
        for name in DENIED:
            _rule(lib, ctx, deny, name)
        for flag in CLONE_NAMESPACE_FLAGS:
            _rule(lib, ctx, deny, "clone", _ArgCmp(0, _CMP_MASKED_EQ, flag, flag))
        _rule(lib, ctx, _act_errno(errno.ENOSYS), "clone3")
        for request in DENIED_IOCTLS:
            _rule(lib, ctx, deny, "ioctl", _ArgCmp(1, _CMP_MASKED_EQ, 0xFFFFFFFF, request))
        fd = os.memfd_create("seccomp-export", os.MFD_CLOEXEC)
        try:
            rc = lib.seccomp_export_bpf(ctx, fd)
            if rc < 0:
                raise SeccompUnavailable(f"seccomp_export_bpf: {os.strerror(-rc)}")
            size = os.lseek(fd, 0, os.SEEK_END)
            return os.pread(fd, size, 0)
        finally:
            os.close(fd)
    finally:
        lib.seccomp_release(ctx)


def filter_fd() -> int:
    """A fresh file descriptor (a memfd at offset 0, close-on-exec: pass it explicitly) holding
    `filter_program`, for one bubblewrap run; the caller closes it."""
    program = filter_program()
    fd = os.memfd_create("sandbox-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
