"""A code candidate sees nothing but its program: each probe below is a real program run in the
real sandbox (bubblewrap + seccomp), trying what an uploaded candidate could try on a worker —
the database's Unix socket, its TCP port, password files, another project's raw upload in the
media folder, the app's source tree, the worker's environment, process and kernel tricks — and
each first checks that the target is there and reachable on the host, so "nothing" is the
sandbox's doing."""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from policies.sandbox.code_tests import execute_hidden_tests
from policies.sandbox.process import SandboxSettings, interpreter_layout, run_program
from tests.conftest import unavailable
from tests.policies.test_sandbox import candidate_trace

SANDBOX = SandboxSettings(enabled=True, timeout_s=10.0, cpu_s=5)
PG_SOCKET = "/var/run/postgresql/.s.PGSQL.5432"


@pytest.fixture(scope="module", autouse=True)
def _sandbox_available() -> None:
    res = run_program("print(1)", SANDBOX)
    if res.status == "unavailable":
        unavailable(f"the sandbox needs bubblewrap, libseccomp and user namespaces: {res.detail}")


def attempt(program: str) -> tuple[str, str]:
    """Run ``program`` in the sandbox: (status, everything it could send back)."""
    res = run_program(program, SANDBOX)
    assert res.status in ("passed", "failed"), res
    return res.status, f"{res.detail}\n{res.stdout}\n{res.stderr}"


def test_the_database_unix_socket() -> None:
    if not os.path.exists(PG_SOCKET):
        unavailable(f"no PostgreSQL socket at {PG_SOCKET} on this machine")
    with socket.socket(socket.AF_UNIX) as s:  # the host reaches it
        s.connect(PG_SOCKET)
    status, out = attempt(
        "import os, socket\n"
        "print('dir visible:', os.path.exists('/var/run/postgresql'))\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        f"s.connect({PG_SOCKET!r})\n"
        "print('CONNECTED')\n"
    )
    assert status == "failed" and "dir visible: False" in out and "CONNECTED" not in out
    assert "PermissionError: [Errno 1] Operation not permitted" in out


def test_a_tcp_connection_to_the_database_port() -> None:
    with socket.create_connection(("127.0.0.1", 5432), timeout=5):  # the host reaches it
        pass
    status, out = attempt(
        "import socket\n"
        "socket.create_connection(('127.0.0.1', 5432), timeout=3)\n"
        "print('CONNECTED')\n"
    )
    assert status == "failed" and "CONNECTED" not in out
    assert "PermissionError: [Errno 1] Operation not permitted" in out


@pytest.mark.parametrize("path", ["/etc/shadow", "/etc/passwd"])
def test_password_files(path: str) -> None:
    content = Path(path).read_text()  # the worker's user reads it
    assert content.strip()
    status, out = attempt(
        f"import os\nprint('etc visible:', os.path.exists('/etc'))\nprint(open({path!r}).read())\n"
    )
    assert status == "failed" and "etc visible: False" in out
    assert f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'" in out
    first = content.splitlines()[0]
    assert first not in out


def test_another_projects_raw_upload_in_the_media_folder() -> None:
    secret = f"project-b-raw-upload-{secrets.token_hex(8)}"
    name = default_storage.save("uploads/2026/12/03/other-project.jsonl", ContentFile(secret))
    path = default_storage.path(name)
    try:
        assert Path(path).read_text() == secret  # on the worker's disk
        status, out = attempt(
            "import os\n"
            f"print('media visible:', os.path.exists({str(settings.MEDIA_ROOT)!r}))\n"
            f"print(open({path!r}).read())\n"
        )
        assert status == "failed" and "media visible: False" in out
        assert "FileNotFoundError" in out and secret not in out
    finally:
        default_storage.delete(name)


def test_the_apps_source_tree_and_settings() -> None:
    source = Path(settings.BASE_DIR) / "auditor" / "settings.py"
    assert source.is_file()
    status, out = attempt(
        f"import os\nprint('ROOT', sorted(os.listdir('/')))\nprint(open({str(source)!r}).read())\n"
    )
    assert status == "failed" and "FileNotFoundError" in out and "SECRET_KEY" not in out
    root = json.loads(out.split("ROOT ", 1)[1].splitlines()[0].replace("'", '"'))
    # the interpreter's prefix, its libraries, numpy, the scratch dir, /dev, /proc: no more
    allowed = {"sandbox", "dev", "proc", "packages", "lib", "lib64", "usr", "root", "opt"}
    assert set(root) <= allowed
    top = Path(settings.BASE_DIR).parts[1]
    layout = interpreter_layout(sys.executable)
    if top not in {Path(p).parts[1] for p in layout.binds}:  # not a directory the two share
        assert top not in root


def test_the_workers_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    key = f"secret-{secrets.token_hex(8)}"
    monkeypatch.setenv("DJANGO_SECRET_KEY", key)
    monkeypatch.setenv("DATABASE_URL", os.environ.get("DATABASE_URL") or "postgres://x:pw@h/db")
    status, out = attempt("import json, os\nprint(json.dumps(dict(os.environ)))\n")
    assert status == "passed"
    env = json.loads(out.split("\n")[1])
    assert set(env) == {"PATH", "HOME", "TMPDIR", "LANG", "PWD"}  # bubblewrap sets PWD
    assert env["PWD"] == env["HOME"] == env["TMPDIR"] == "/sandbox"
    assert key not in out and os.environ["DATABASE_URL"] not in out


def test_processes_and_kernel_tricks() -> None:
    """A fork bomb meets the process limit; ptrace of another process, a mount, a new user
    namespace and a raw socket are all refused; the kernel's settings are read-only."""
    status, out = attempt("import os\nwhile True:\n    os.fork()\n")
    assert status == "failed" and "Resource temporarily unavailable" in out
    status, out = attempt(
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    import time; time.sleep(30)\n"
        "results = {\n"
        "    'ptrace': libc.ptrace(16, pid, 0, 0),\n"  # PTRACE_ATTACH
        "    'mount': libc.mount(b'none', b'/sandbox', b'tmpfs', 0, None),\n"
        "}\n"
        "errors = {}\n"
        "for name, call in (('unshare', lambda: os.unshare(os.CLONE_NEWUSER)),\n"
        "                   ('sysctl', lambda: open('/proc/sys/kernel/hostname', 'w')),\n"
        "                   ('raw socket', lambda: __import__('socket').socket(17, 3))):\n"
        "    try:\n"
        "        call()\n"
        "    except OSError as exc:\n"
        "        errors[name] = exc.errno\n"
        "os.kill(pid, 9)\n"
        "print(results, errors)\n"
    )
    assert status == "passed", out
    assert "{'ptrace': -1, 'mount': -1} {'unshare': 1, 'sysctl': 30, 'raw socket': 1}" in out


def test_a_hostile_candidate_among_normal_ones_changes_no_other_label() -> None:
    """Through `execute_hidden_tests`, as the calibration runs candidates: the probe is its own
    labelled failure; the correct and the wrong candidate are labelled as before."""
    bodies = {
        "correct": "def f():\n    return 1\n",
        "wrong": "def f():\n    return 2\n",
        "reads_shadow": "def f():\n    return len(open('/etc/shadow').read())\n",
    }
    labels, stats = execute_hidden_tests([candidate_trace(bodies)], SANDBOX, workers=2)
    assert labels[("sb", "correct")].valid is True
    assert labels[("sb", "wrong")].valid is False
    shadow = labels[("sb", "reads_shadow")]
    assert shadow.valid is False and "FileNotFoundError" in shadow.detail
    assert stats["passed"] == 1 and stats["failed"] == 2
