"""Run untrusted Python in an isolated, limited, killable process (issue 13 §2c).

**This executes uploaded code.** It is off by default (``SandboxSettings.enabled``); the app
switches it on per project, for owners only, and calls it from a worker process — never the
web process. See docs/sandbox.md for what it does and does not protect.

`run_program` writes the source to a fresh scratch directory and starts
`policies/sandbox_launch.py` in a new session, which isolates (namespaces without network,
read-only file system except a size-limited private scratch tmpfs, a private /dev and /proc,
no capabilities, resource limits, a pids cgroup when one can be made) and only then runs the
program. The caller waits at most ``timeout_s`` and then kills the whole process group; the
namespace's first process dies with it and takes every other process of the namespace along.
Whatever the program does — loop forever, fork, allocate 10 GB, open a socket, write outside
the scratch directory — ends as that program's result, never as an exception in the caller.
When the isolation itself cannot be set up (not root, no namespaces), the result is
``unavailable``: the program is never run unisolated.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

LAUNCHER = Path(__file__).with_name("sandbox_launch.py")
Status = Literal["passed", "failed", "timeout", "unavailable"]


class SandboxDisabled(RuntimeError):
    """Execution was asked for while ``SandboxSettings.enabled`` is false."""


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """Limits of one program run (this project's choices; generous for HumanEval/MBPP-sized
    tests, tight enough that a hostile program costs little).

    ``timeout_s``: wall clock, then the process group is killed. ``cpu_s``: CPU seconds
    (RLIMIT_CPU). ``memory_mb``: address space per process (RLIMIT_AS). ``file_size_mb``:
    largest file (RLIMIT_FSIZE). ``scratch_mb``: the scratch tmpfs. ``open_files``:
    RLIMIT_NOFILE. ``max_processes``: the pids cgroup's limit (root ignores RLIMIT_NPROC; the
    cgroup is made when the machine allows, see `ExecResult.process_limit`). ``output_bytes``:
    how much of stdout/stderr is read back. ``python``: interpreter for programs (default:
    this one). ``cgroup_root``: where the pids cgroup is made."""

    enabled: bool = False
    timeout_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int = 1024
    file_size_mb: int = 16
    scratch_mb: int = 64
    open_files: int = 64
    max_processes: int = 64
    output_bytes: int = 65536
    python: str = ""
    cgroup_root: str = "/sys/fs/cgroup/pids"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What one run did. ``passed``: exit status 0 (and the marker printed, when one was
    asked for). ``failed``: anything else the program did, including a CPU-limit or
    out-of-memory death. ``timeout``: killed at the wall-clock limit. ``unavailable``: the
    isolation could not be set up, the program did not run."""

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


def _tail(path: Path, limit: int) -> str:
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(size - limit, 0))
        return fh.read().decode("utf-8", "replace")


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
        return "unavailable", _last_line(stderr) or f"sandbox did not start (status {rc})"
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
    """The launcher's exit status, or None once ``timeout`` seconds have passed — woken by the
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


def run_program(source: str, settings: SandboxSettings, *, marker: str | None = None) -> ExecResult:
    """Run ``source`` as ``program.py`` in the sandbox (see module docstring). ``marker``: a
    string the program must print for a pass (so an early ``exit(0)`` is not a pass). Raises
    `SandboxDisabled` unless ``settings.enabled``; never raises for what the program does."""
    if not settings.enabled:
        raise SandboxDisabled("code execution is off (SandboxSettings.enabled is false)")
    work = Path(tempfile.mkdtemp(prefix="ta-sandbox-"))
    scratch = work / "scratch"
    scratch.mkdir(mode=0o700)
    (scratch / "program.py").write_text(source, encoding="utf-8")
    out_path, err_path = work / "stdout", work / "stderr"
    cgroup = _make_cgroup(settings.cgroup_root, settings.max_processes)
    read_fd, write_fd = os.pipe()
    cfg = {
        "scratch": str(scratch),
        "python": settings.python or sys.executable,
        "cpu_s": settings.cpu_s,
        "memory_bytes": settings.memory_mb << 20,
        "file_size_bytes": settings.file_size_mb << 20,
        "scratch_bytes": settings.scratch_mb << 20,
        "open_files": settings.open_files,
        "status_fd": write_fd,
        "cgroup_procs": str(cgroup / "cgroup.procs") if cgroup else "",
    }
    start = time.monotonic()
    timed_out = False
    try:
        with out_path.open("wb") as out, err_path.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(cfg)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                pass_fds=(write_fd,),
                start_new_session=True,  # its own process group, so one kill reaches all
                cwd=str(work),
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
        try:
            status = os.read(read_fd, 4096).decode("utf-8", "replace")
        except BlockingIOError:
            status = ""
        ready = status.startswith("isolated") and "exec failed" not in status
        stdout = _tail(out_path, settings.output_bytes)
        stderr = _tail(err_path, settings.output_bytes)
    finally:
        if write_fd >= 0:
            os.close(write_fd)
        os.close(read_fd)
        _remove_cgroup(cgroup)
        shutil.rmtree(work, ignore_errors=True)
    if not ready and "exec failed" in status:
        stderr = status.strip()
    result, detail = _classify(rc, timed_out, ready, stdout, stderr, marker)
    return ExecResult(result, rc, duration, detail, stdout, stderr, cgroup is not None)
