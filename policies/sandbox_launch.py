"""The sandbox's launcher: run as a script (``python -I -S sandbox_launch.py CONFIG_JSON``) by
`policies.sandbox`, never imported by the app. Standard library only.

It isolates, then executes ``program.py`` in the scratch directory:

1. joins the pids cgroup the caller prepared (a bound on processes: root ignores
   ``RLIMIT_NPROC``), when there is one;
2. new mount, network, PID, IPC and UTS namespaces (``unshare``): no network interface but a
   loopback that is down, and processes that see only each other;
3. forks the namespace's first process, which dies with the launcher (``PR_SET_PDEATHSIG``) —
   and when it dies the kernel kills everything left in the namespace;
4. in it: the scratch directory becomes a size-limited tmpfs holding only the program (what
   the program writes never reaches the host's disk), ``/dev`` a read-only tmpfs with only
   null, zero, random and urandom (no raw disks), every other mount read-only, a fresh
   read-only ``/proc``; resource limits (CPU seconds, address space, file size, open files, no
   core dumps); every capability dropped from the bounding set and ``no_new_privs`` set, so
   the program cannot undo any of it; then it reports "isolated" on the status pipe and
   ``exec``s the interpreter (the pipe is close-on-exec: a failed exec reports itself).

Any failure before ``exec`` exits with status 125 without reporting "isolated", or reports
"exec failed": the caller then labels nothing (the sandbox is unavailable); it never runs the
program unisolated.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import stat
import sys
from typing import Any

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
SETUP_FAILED = 125

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_void_p,
]
_libc.prctl.argtypes = [
    ctypes.c_int,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
]


def _mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    rc = _libc.mount(
        source.encode() if source else None,
        target.encode(),
        fstype.encode() if fstype else None,
        flags,
        None,
    )
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _prctl(option: int, arg: int) -> None:
    if _libc.prctl(option, arg, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}, {arg}): {os.strerror(err)}")


def _unescape(path: str) -> str:
    """Mount points in mountinfo escape space, tab, newline and backslash as octal."""
    return path.encode().decode("unicode_escape").encode("latin-1").decode()


def _private_dev() -> None:
    """A tmpfs /dev with the four harmless character devices: nothing else (a raw disk, the
    host's /dev/shm) is reachable. Made read-only with the rest."""
    _mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC)
    for name, minor in (("null", 3), ("zero", 5), ("random", 8), ("urandom", 9)):
        path = f"/dev/{name}"
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
        os.chmod(path, 0o666)


def _isolate_files(scratch: str, size_bytes: int) -> None:
    """The scratch directory becomes a private tmpfs with the program in it; every other mount
    read-only (keeping nosuid/nodev/noexec); /dev private; a fresh, read-only /proc."""
    with open(os.path.join(scratch, "program.py"), "rb") as fh:
        program = fh.read()
    _mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV)
    _libc_mount_opts(scratch, size_bytes)
    with open(os.path.join(scratch, "program.py"), "wb") as fh:
        fh.write(program)
    _private_dev()
    with open("/proc/self/mountinfo") as fh:
        mounts = [(_unescape(f[4]), f[5].split(",")) for f in (ln.split() for ln in fh)]
    for point, opts in mounts:
        if point == scratch:
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        flags |= MS_NOSUID if "nosuid" in opts else 0
        flags |= MS_NODEV if "nodev" in opts else 0
        flags |= MS_NOEXEC if "noexec" in opts else 0
        try:
            _mount(None, point, None, flags)
        except OSError:
            if os.path.exists(point) and "ro" not in opts:
                raise  # a writable mount we cannot protect: refuse to run
    _mount("proc", "/proc", "proc", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _libc_mount_opts(target: str, size_bytes: int) -> None:
    """Give the tmpfs at ``target`` its size limit (a remount with data ``size=``)."""
    data = f"size={size_bytes},mode=0777".encode()
    rc = _libc.mount(None, target.encode(), None, MS_REMOUNT | MS_NOSUID | MS_NODEV, data)
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"tmpfs size on {target}: {os.strerror(err)}")


def _limits(cfg: dict[str, Any]) -> None:
    cpu = int(cfg["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    mem = int(cfg["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    fsize = int(cfg["file_size_bytes"])
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    nofile = int(cfg["open_files"])
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _child(cfg: dict[str, Any], status_fd: int) -> None:
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    scratch = cfg["scratch"]
    _isolate_files(scratch, int(cfg["scratch_bytes"]))
    os.chdir(scratch)
    last_cap = int(open("/proc/sys/kernel/cap_last_cap").read())
    _limits(cfg)
    for cap in range(last_cap + 1):
        _prctl(PR_CAPBSET_DROP, cap)
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    # "isolated" now; the pipe closes on a successful exec (close-on-exec) and says
    # "exec failed" otherwise, so a missing interpreter is never mistaken for a failing program
    os.write(status_fd, b"isolated\n")
    os.set_inheritable(status_fd, False)
    env = {"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8"}
    python = cfg["python"]
    try:
        os.execve(python, [python, "-I", "-B", "program.py"], env)
    except OSError as exc:
        os.write(status_fd, f"exec failed: {exc}\n".encode())
        raise


def main() -> None:
    cfg = json.loads(sys.argv[1])
    status_fd = int(cfg["status_fd"])
    try:
        if cfg.get("cgroup_procs"):
            with open(cfg["cgroup_procs"], "w") as fh:
                fh.write("0")  # this process, and so everything it starts
        os.unshare(
            os.CLONE_NEWNS | os.CLONE_NEWNET | os.CLONE_NEWPID | os.CLONE_NEWIPC | os.CLONE_NEWUTS
        )
        _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing propagates back to the host
    except OSError as exc:
        print(f"sandbox setup failed: {exc}", file=sys.stderr)
        sys.exit(SETUP_FAILED)
    pid = os.fork()
    if pid == 0:
        try:
            _child(cfg, status_fd)
        except BaseException as exc:  # noqa: BLE001 — any failure: never run unisolated
            print(f"sandbox setup failed: {exc}", file=sys.stderr)
        os._exit(SETUP_FAILED)
    os.close(status_fd)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    sys.exit(128 - code if code < 0 else code)  # a signal the shell's way: 128 + number


if __name__ == "__main__":
    main()
