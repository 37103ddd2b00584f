"""The sandbox's seccomp filter (policies.sandbox.seccomp): every denied system call really fails
with EPERM inside the sandbox (clone3 with ENOSYS), the same calls on the host without the filter
mostly do not, and the sandbox refuses to run a program without the filter."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import subprocess
import sys

import pytest

from policies.sandbox.process import (
    SandboxSettings,
    _classify,
    bwrap_command,
    interpreter_layout,
    run_program,
)
from policies.sandbox.seccomp import DENIED, _library, filter_program
from tests.conftest import unavailable

FAST = SandboxSettings(enabled=True, timeout_s=10.0, cpu_s=5)

#: Not called on the host: harmless in the sandbox (filtered, or without capabilities), not in
#: a root test process.
HOST_SKIP = {"vhangup", "reboot", "kexec_load", "kexec_file_load", "swapoff", "acct", "syslog"}


@pytest.fixture(scope="module", autouse=True)
def _sandbox_available() -> None:
    res = run_program("print(1)", FAST)
    if res.status == "unavailable":
        unavailable(f"the sandbox needs bubblewrap, libseccomp and user namespaces: {res.detail}")


def syscall_numbers() -> dict[str, int]:
    lib = _library()
    out = {}
    for name in (*DENIED, "clone", "clone3", "ioctl"):
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr >= 0:
            out[name] = nr
    return out


def probe(numbers: dict[str, int], skip: set[str]) -> str:
    """A program calling each system call with invalid arguments (all -1: bad descriptors,
    pointers, flags), printing {name: errno} (0 for success)."""
    return (
        "import ctypes, json, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.syscall.restype = ctypes.c_long\n"
        f"numbers = {json.dumps(numbers)}\n"
        f"skip = {sorted(skip)!r}\n"
        "out = {}\n"
        "for name, nr in numbers.items():\n"
        "    if name in skip or name in ('clone', 'ioctl'):\n"
        "        continue\n"
        "    ctypes.set_errno(0)\n"
        "    m1 = ctypes.c_long(-1)\n"
        "    rc = libc.syscall(ctypes.c_long(nr), m1, m1, m1, m1, m1, m1)\n"
        "    out[name] = ctypes.get_errno() if rc == -1 else 0\n"
        "ctypes.set_errno(0)\n"  # TIOCSTI on stdin (/dev/null): ENOTTY unfiltered
        "rc = libc.syscall(ctypes.c_long(numbers['ioctl']), 0, 0x5412, 0)\n"
        "out['ioctl TIOCSTI'] = ctypes.get_errno() if rc == -1 else 0\n"
        "if 'clone' not in skip:\n"  # a new user namespace: a child that exits at once unfiltered
        "    ctypes.set_errno(0)\n"
        "    rc = libc.syscall(ctypes.c_long(numbers['clone']), 0x10000000 | 17, 0, 0, 0, 0)\n"
        "    if rc == 0:\n"
        "        os._exit(0)\n"
        "    out['clone NEWUSER'] = ctypes.get_errno() if rc == -1 else 0\n"
        "    pid = os.fork()\n"  # plain fork (clone without namespace flags) still works
        "    if pid == 0:\n"
        "        os._exit(7)\n"
        "    out['fork'] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])\n"
        "status = open('/proc/self/status').read()\n"
        "out['Seccomp'] = status.split('Seccomp:')[1].split()[0]\n"
        "print(json.dumps(out))\n"
    )


def test_every_denied_system_call_fails_with_eperm_inside_the_sandbox() -> None:
    numbers = syscall_numbers()
    res = run_program(probe(numbers, set()), FAST)
    assert res.status == "passed", res.stderr
    got = json.loads(res.stdout)
    assert got.pop("Seccomp") == "2" and got.pop("fork") == 7
    assert got.pop("clone3") == errno.ENOSYS  # the C library falls back to clone
    assert got.pop("clone NEWUSER") == errno.EPERM and got.pop("ioctl TIOCSTI") == errno.EPERM
    wrong = {name: errno.errorcode.get(e, e) for name, e in got.items() if e != errno.EPERM}
    assert wrong == {}
    assert set(got) == {n for n in DENIED if n in numbers}  # every one was called


def test_the_same_calls_unfiltered_on_the_host_are_not_eperm() -> None:
    """The control: the EPERM above is the filter's doing. Run in a child process on the host
    (the test's own user, no filter), with the same invalid arguments."""
    numbers = syscall_numbers()
    out = subprocess.run(
        [sys.executable, "-I", "-c", probe(numbers, HOST_SKIP | {"clone"})],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=True,
    ).stdout
    host = json.loads(out)
    assert host["Seccomp"] == "0" and host["ioctl TIOCSTI"] == errno.ENOTTY
    if os.geteuid() != 0:
        pytest.skip("the control's arguments are chosen for a root test process")
    eperm = [name for name, e in host.items() if e == errno.EPERM]
    assert eperm == [], eperm  # invalid arguments, not a missing capability, as root
    assert set(host) >= {n for n in DENIED if n in numbers} - HOST_SKIP


def test_no_program_runs_without_the_filter(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """bubblewrap started without ``--seccomp``: the launcher inside refuses, nothing runs."""
    settings = SandboxSettings(enabled=True)
    layout = interpreter_layout(sys.executable)
    marker = tmp_path / "ran"
    program = os.memfd_create("program", 0)
    os.write(program, f"open({str(marker)!r}, 'w')\nprint('ran')\n".encode())
    os.lseek(program, 0, os.SEEK_SET)
    read_fd, write_fd = os.pipe()
    cmd = bwrap_command(
        "bwrap", layout, settings, program_fd=program, status_fd=write_fd, seccomp_fd=None
    )
    proc = subprocess.run(
        cmd, pass_fds=(program, write_fd), capture_output=True, text=True, timeout=30
    )
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    try:
        status = os.read(read_fd, 100).decode()
    except BlockingIOError:
        status = ""
    os.close(read_fd)
    os.close(program)
    assert proc.returncode == 125 and status == "" and "ran" not in proc.stdout
    assert "seccomp filter is not in force" in proc.stderr
    rc, ready = proc.returncode, status.startswith("isolated")
    assert _classify(rc, False, ready, proc.stdout, proc.stderr, None) == (
        "unavailable",
        "sandbox unavailable: sandbox setup failed: the seccomp filter is not in force",
    )


def test_the_filter_is_a_bpf_program_for_this_architecture() -> None:
    prog = filter_program()
    assert len(prog) % 8 == 0 and len(prog) // 8 > len(DENIED) // 2  # sock_filter: 8 bytes
    assert ctypes.sizeof(ctypes.c_uint64) == 8
