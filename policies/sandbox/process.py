"""Run untrusted Python in an isolated, limited, killable process.

**This executes uploaded code.** It is off by default (``SandboxSettings.enabled``); the app
switches it on per project and calls it from a worker process — never the web process. See
docs/sandbox.md for what it does and does not protect.

`run_program` starts bubblewrap (``bwrap``) with fresh user, mount, PID, IPC, UTS, network and
cgroup namespaces. The sandbox's file system is an empty read-only root holding only the
interpreter's own files (its binary, its standard library without site-packages, the shared
libraries they load — `interpreter_layout`), four harmless devices, a fresh ``/proc`` and a
size-limited scratch tmpfs with the program in it: no project tree, no ``/etc``, ``/var``,
``/run``, ``/tmp`` or media folder of the host, so no host socket either. A seccomp filter
(`policies.sandbox.seccomp`) denies sockets, tracing, mounts, namespaces and the rest; every
capability is dropped; the environment is four fixed variables. Inside, `launch.py`
checks the filter is in force, sets the resource limits and runs the program. The caller waits
at most ``timeout_s`` and then kills bubblewrap, and with it the namespace and everything in it.
Whatever the program does ends as that program's result, never as an exception in the caller.
When the isolation cannot be set up (no bubblewrap, no libseccomp, namespaces refused), the
result is ``unavailable`` with the reason (``sandbox unavailable: …``): the program is never run
any weaker way.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from .seccomp import SeccompUnavailable, filter_fd

LAUNCHER = Path(__file__).with_name("launch.py")
SECCOMP = Path(__file__).with_name("seccomp.py")
Status = Literal["passed", "failed", "timeout", "unavailable"]
#: The scratch directory inside the sandbox: the program's cwd, HOME and TMPDIR.
SCRATCH = "/sandbox"
#: The program's user and group inside its user namespace (nobody).
SANDBOX_ID = "65534"
UNAVAILABLE = "sandbox unavailable: "
_DEVICES = ("null", "zero", "random", "urandom")


class SandboxDisabled(RuntimeError):
    """Execution was asked for while ``SandboxSettings.enabled`` is false."""


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be set up on this machine (the message says why)."""


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """Limits of one program run (this project's choices; generous for HumanEval/MBPP-sized
    tests, tight enough that a hostile program costs little).

    ``timeout_s``: wall clock, then bubblewrap and the namespace are killed; twice ``cpu_s``,
    so a program that loops is stopped by the CPU limit (a failure) and the wall clock stops
    only one that waits or was not given its CPU time (`policies.sandbox.code_tests`: unknown).
    ``cpu_s``: CPU seconds (RLIMIT_CPU). ``memory_mb``: address space per process (RLIMIT_AS).
    ``file_size_mb``: largest file (RLIMIT_FSIZE). ``scratch_mb``: the scratch tmpfs.
    ``open_files``: RLIMIT_NOFILE. ``max_processes``: RLIMIT_NPROC inside the run's user
    namespace, and a pids cgroup's limit where the worker is root (whom RLIMIT_NPROC does not
    bind) and the machine allows one (`ExecResult.process_limit`). ``output_bytes``: how much
    of stdout/stderr is read back. ``python``: interpreter for programs (default: this one's
    base interpreter, outside any virtualenv). ``cgroup_root``: where the pids cgroup is made.
    ``bwrap``: the bubblewrap executable (a name looked up on PATH, or a path). ``packages``:
    installed packages programs may import besides the standard library (benchmark programs
    use numpy), taken from this interpreter's environment and shown read-only — only when the
    programs run on this interpreter (``python`` empty), whose build they are for."""

    enabled: bool = False
    timeout_s: float = 20.0
    cpu_s: int = 10
    memory_mb: int = 1024
    file_size_mb: int = 16
    scratch_mb: int = 64
    open_files: int = 64
    max_processes: int = 64
    output_bytes: int = 65536
    python: str = ""
    cgroup_root: str = "/sys/fs/cgroup/pids"
    bwrap: str = "bwrap"
    packages: tuple[str, ...] = ("numpy",)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What one run did. ``passed``: exit status 0 (and the marker printed, when one was
    asked for). ``failed``: anything else the program did, including a CPU-limit or
    out-of-memory death. ``timeout``: killed at the wall-clock limit. ``unavailable``: the
    isolation could not be set up, the program did not run (``detail`` says why)."""

    status: Status
    returncode: int | None
    duration_s: float
    detail: str
    stdout: str
    stderr: str
    process_limit: bool

    @property
    def passed(self) -> bool | None:
        """True / False as a label; None when the program did not run."""
        return None if self.status == "unavailable" else self.status == "passed"


@dataclass(frozen=True, slots=True)
class Layout:
    """What of the host the sandbox shows: the interpreter's real path, the paths bound
    read-only (its binary, standard library directories and shared libraries), and
    directories inside those shown empty (site-packages: installed packages, the app's own
    dependencies among them, are not the program's)."""

    executable: str
    binds: tuple[str, ...]
    hidden: tuple[str, ...]
    packages: tuple[tuple[str, str], ...] = ()  # (host directory, path in the sandbox)


_PROBE = (
    "import json, os, site, sys, sysconfig\n"
    "p = sysconfig.get_paths()\n"
    "print(json.dumps({'executable': os.path.realpath(sys.executable),\n"
    "    'dirs': [p['stdlib'], p['platstdlib']]\n"
    "    + [d for d in sys.path if d.endswith('lib-dynload')],\n"
    "    'site': site.getsitepackages()}))\n"
)


def _shared_libraries(files: list[str]) -> set[str]:
    """The shared libraries (and the dynamic loader) ``files`` load, as ``ldd`` resolves them."""
    if not files:
        return set()
    ldd = shutil.which("ldd", path="/usr/bin:/bin")
    if ldd is None:
        raise SandboxUnavailable("ldd not found (Debian package libc-bin)")
    out = subprocess.run(
        [ldd, *files],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        check=False,
        timeout=60,
    ).stdout
    found: set[str] = set()
    for line in out.splitlines():
        line = line.strip()
        if "=>" in line:
            line = line.split("=>", 1)[1].strip()
        if line.startswith("/") and not line.endswith(":"):
            path = line.split(" (", 1)[0].strip()
            if os.path.exists(path):
                found.add(path)
    return found


def _inside(path: str, dirs: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


@functools.cache
def interpreter_layout(python: str) -> Layout:
    """The files the sandbox shows for ``python`` (see `Layout`), found once per process by
    asking the interpreter itself (run by its real path, so a virtualenv's interpreter gives
    its base installation). Raises `SandboxUnavailable`."""
    real = os.path.realpath(python)
    if not os.access(real, os.X_OK):
        raise SandboxUnavailable(f"interpreter {python} not found or not executable")
    try:
        probe = subprocess.run(
            [real, "-I", "-S", "-c", _PROBE],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            check=True,
            timeout=60,
        )
        info = json.loads(probe.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise SandboxUnavailable(f"interpreter {python} did not describe itself: {exc}") from None
    dirs: list[str] = []
    for d in sorted({os.path.realpath(d) for d in info["dirs"] if os.path.isdir(d)}, key=len):
        if not _inside(d, dirs):
            dirs.append(d)
    modules = [
        os.path.join(d, f)
        for d in dirs
        if d.endswith("lib-dynload")
        for f in sorted(os.listdir(d))
        if f.endswith(".so")
    ]
    if not modules:  # lib-dynload inside the standard library directory
        for d in dirs:
            dyn = os.path.join(d, "lib-dynload")
            if os.path.isdir(dyn):
                modules += [
                    os.path.join(dyn, f) for f in sorted(os.listdir(dyn)) if f.endswith(".so")
                ]
    libs = sorted(
        p for p in _shared_libraries([info["executable"], *modules]) if not _inside(p, dirs)
    )
    hidden = sorted(
        os.path.realpath(s)
        for s in info["site"]
        if os.path.isdir(s) and _inside(os.path.realpath(s), dirs)
    )
    return Layout(info["executable"], (info["executable"], *dirs, *libs), tuple(hidden))


#: Where `SandboxSettings.packages` appear in the sandbox (first on the program's sys.path).
PACKAGES = "/packages"


@functools.cache
def package_layout(python: str, names: tuple[str, ...]) -> Layout:
    """`interpreter_layout` plus the ``names`` packages of this interpreter's environment (a
    package's directory and its wheel's ``<name>.libs``, and the system libraries their
    extension modules load), found without importing them."""
    import importlib.util

    base = interpreter_layout(python)
    dirs: list[tuple[str, str]] = []
    for name in names:
        spec = importlib.util.find_spec(name)
        locations = list(spec.submodule_search_locations or []) if spec else []
        if not locations:
            continue  # not installed here: the program's import fails, as it would anyway
        pkg = os.path.realpath(locations[0])
        dirs.append((pkg, f"{PACKAGES}/{os.path.basename(pkg)}"))
        libs = f"{pkg}.libs"
        if os.path.isdir(libs):
            dirs.append((libs, f"{PACKAGES}/{os.path.basename(libs)}"))
    own = [src for src, _ in dirs]
    modules = [
        os.path.join(root, f)
        for src in own
        for root, _, files in os.walk(src)
        for f in files
        if ".so" in f
    ]
    shown = list(base.binds)
    extra = sorted(
        p for p in _shared_libraries(modules) if not _inside(p, own) and not _inside(p, shown)
    )
    return Layout(base.executable, (*base.binds, *extra), base.hidden, tuple(dirs))


def bwrap_command(
    bwrap: str,
    layout: Layout,
    settings: SandboxSettings,
    *,
    program_fd: int,
    status_fd: int,
    seccomp_fd: int | None,
) -> list[str]:
    """bubblewrap's command line for one run (see module docstring). ``seccomp_fd`` None leaves
    the filter out — which `launch.py` then refuses to run under."""
    cmd = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        SANDBOX_ID,
        "--gid",
        SANDBOX_ID,
        "--hostname",
        "sandbox",
        "--clearenv",
    ]
    for name, value in (
        ("PATH", "/usr/bin:/bin"),
        ("HOME", SCRATCH),
        ("TMPDIR", SCRATCH),
        ("LANG", "C.UTF-8"),
    ):
        cmd += ["--setenv", name, value]
    # /proc read-only: where the worker is root, the program's user maps to the host's root,
    # whom /proc/sys and /proc/sysrq-trigger's permission bits would let write
    cmd += ["--proc", "/proc", "--remount-ro", "/proc", "--tmpfs", "/dev"]
    for dev in _DEVICES:
        cmd += ["--dev-bind", f"/dev/{dev}", f"/dev/{dev}"]
    cmd += ["--remount-ro", "/dev"]
    for path in layout.binds:
        cmd += ["--ro-bind", path, path]
    for path in layout.hidden:
        cmd += ["--tmpfs", path, "--remount-ro", path]
    for src, dest in layout.packages:
        cmd += ["--ro-bind", src, dest]
    cmd += ["--size", str(settings.scratch_mb << 20), "--tmpfs", SCRATCH]
    cmd += ["--perms", "0644", "--file", str(program_fd), f"{SCRATCH}/program.py"]
    cmd += ["--remount-ro", "/", "--chdir", SCRATCH]
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    cmd += [
        "--",
        layout.executable,
        "-I",
        "-B",
        "-c",
        _launcher_source(),
        str(status_fd),
        str(settings.cpu_s),
        str(settings.memory_mb << 20),
        str(settings.file_size_mb << 20),
        str(settings.open_files),
        str(settings.max_processes),
        PACKAGES if layout.packages else "",
    ]
    return cmd


@functools.cache
def _launcher_source() -> str:
    return LAUNCHER.read_text(encoding="utf-8")


def _tail(fd: int, limit: int) -> str:
    size = os.fstat(fd).st_size
    return os.pread(fd, limit, max(size - limit, 0)).decode("utf-8", "replace")


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _error_line(stderr: str) -> str:
    """The last line of stderr that names an error: a traceback's unindented last line, not
    its header. Why not simply the last line: a program's forked children share its stderr and
    die with its PID namespace, so their half-written tracebacks can follow the real error."""
    for line in reversed(stderr.splitlines()):
        if line.strip() and not line[0].isspace() and not line.startswith("Traceback ("):
            return line[:300]
    return _last_line(stderr)


def _make_cgroup(root: str, limit: int) -> Path | None:
    """A pids cgroup for one run, or None when the machine does not allow one."""
    base = Path(root)
    if not (base / "cgroup.procs").exists():
        return None
    path = base / f"trace-auditor-sandbox-{uuid.uuid4().hex}"
    try:
        path.mkdir()
        (path / "pids.max").write_text(str(limit))
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return path


def _remove_cgroup(path: Path | None) -> None:
    """Remove a run's cgroup; its processes are dead or dying, so retry briefly."""
    if path is None:
        return
    for _ in range(50):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def _classify(
    rc: int, timed_out: bool, ready: bool, stdout: str, stderr: str, marker: str | None
) -> tuple[Status, str]:
    if not ready:
        why = _last_line(stderr) or f"the sandbox did not start (status {rc})"
        return "unavailable", UNAVAILABLE + why
    if timed_out:
        return "timeout", "killed at the wall-clock limit"
    if rc == 0 and (marker is None or marker in stdout):
        return "passed", ""
    if rc == 0:
        return "failed", "exited before the tests finished"
    if rc > 128:
        sig = rc - 128
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        if sig == signal.SIGXCPU or name == "SIGXCPU":
            return "failed", "CPU time limit"
        if sig == signal.SIGXFSZ:
            return "failed", "file size limit"
        return "failed", f"killed by {name}"
    return "failed", _error_line(stderr) or f"exit status {rc}"


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    """bubblewrap's exit status, or None once ``timeout`` seconds have passed — woken by the
    exit itself (a pidfd), not by polling: `Popen.wait` with a timeout sleeps in doubling steps
    of up to 50 ms between checks and noticed a 50 ms program's end some 20 ms late, a quarter
    of each run. Where there are no pidfds (Linux before 5.3), it polls."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    return proc.wait() if ready else None


def _unavailable(reason: str) -> ExecResult:
    return ExecResult("unavailable", None, 0.0, UNAVAILABLE + reason, "", "", False)


def _prepare(settings: SandboxSettings) -> tuple[str, Layout]:
    """bubblewrap's path and the interpreter's layout; raises `SandboxUnavailable`."""
    bwrap = shutil.which(settings.bwrap)
    if bwrap is None:
        raise SandboxUnavailable(
            f"bubblewrap ({settings.bwrap}) not found; install the Debian package bubblewrap"
        )
    if settings.python or not settings.packages:
        return bwrap, interpreter_layout(settings.python or sys.executable)
    return bwrap, package_layout(sys.executable, settings.packages)


def _memfd(name: str, data: bytes = b"") -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    if data:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    return fd


def run_program(source: str, settings: SandboxSettings, *, marker: str | None = None) -> ExecResult:
    """Run ``source`` as ``program.py`` in the sandbox (see module docstring). ``marker``: a
    string the program must print for a pass (so an early ``exit(0)`` is not a pass). Raises
    `SandboxDisabled` unless ``settings.enabled``; never raises for what the program does."""
    if not settings.enabled:
        raise SandboxDisabled("code execution is off (SandboxSettings.enabled is false)")
    try:
        bwrap, layout = _prepare(settings)
        seccomp_fd = filter_fd()
    except (SandboxUnavailable, SeccompUnavailable) as exc:
        return _unavailable(str(exc))
    program_fd = _memfd("program", source.encode("utf-8"))
    out_fd, err_fd = _memfd("stdout"), _memfd("stderr")
    read_fd, write_fd = os.pipe()
    root = os.geteuid() == 0
    cgroup = _make_cgroup(settings.cgroup_root, settings.max_processes) if root else None
    cmd = bwrap_command(
        bwrap, layout, settings, program_fd=program_fd, status_fd=write_fd, seccomp_fd=seccomp_fd
    )
    if cgroup is not None:  # join it first: everything bubblewrap starts is then counted
        cmd = [
            "/bin/sh",
            "-c",
            'echo 0 > "$1" && shift && exec "$@"',
            "sh",
            str(cgroup / "cgroup.procs"),
            *cmd,
        ]
    start = time.monotonic()
    timed_out = False
    status = ""
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out_fd,
            stderr=err_fd,
            pass_fds=(write_fd, program_fd, seccomp_fd),
            start_new_session=True,  # its own process group, so one kill reaches all
            cwd="/",
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
        os.close(write_fd)
        write_fd = -1
        rc = _wait(proc, settings.timeout_s)
        if rc is None:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
        duration = time.monotonic() - start
        os.set_blocking(read_fd, False)
        with contextlib.suppress(BlockingIOError):
            status = os.read(read_fd, 4096).decode("utf-8", "replace")
        stdout = _tail(out_fd, settings.output_bytes)
        stderr = _tail(err_fd, settings.output_bytes)
    except OSError as exc:
        return _unavailable(f"bubblewrap did not start: {exc}")
    finally:
        for fd in (write_fd, read_fd, program_fd, seccomp_fd, out_fd, err_fd):
            if fd >= 0:
                os.close(fd)
        _remove_cgroup(cgroup)
    ready = status.startswith("isolated")
    result, detail = _classify(rc, timed_out, ready, stdout, stderr, marker)
    return ExecResult(result, rc, duration, detail, stdout, stderr, cgroup is not None or not root)
