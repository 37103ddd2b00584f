"""The web tier as deployed: a real gunicorn with docker/gunicorn.conf.py (gthread) on loopback,
against the test database.

- Slow clients, bounded: more uploads trickling at 1 byte/s than a sync set-up had workers, and
  the login page still answers promptly.
- An anonymous multipart body declared at 400 MB is refused before it is sent.
- A chunked upload (no Content-Length) is accepted, not "the file is empty".
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.builders.v1 import jsonl, simple_trace
from tests.conftest import REPO, _db_url, wait_for
from traces.models import Upload

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

# A gthread worker keeps the connections it accepted: one whose threads are all held by slow
# clients makes a request it accepted wait even if another worker is idle. So the bound that
# holds is slow clients < threads of one worker (docker/gunicorn.conf.py: 8); past it, the
# buffering proxy in docker/compose.yml is what protects the app (docs/operations.md).
WORKERS, THREADS = 2, 8
SLOW_CLIENTS = 6  # more than the 3 sync workers the issue saw starved by 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def gunicorn(postgres, _media_root, tmp_path):  # type: ignore[no-untyped-def]
    port = _free_port()
    spool = tmp_path / "spool"  # where the server's temporary files (spooled bodies) go
    spool.mkdir()
    env = dict(
        os.environ,
        DATABASE_URL=_db_url(postgres),
        TA_MEDIA_ROOT=str(_media_root),
        DJANGO_SETTINGS_MODULE="auditor.settings",
        GUNICORN_BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY=str(WORKERS),
        GUNICORN_THREADS=str(THREADS),
        GUNICORN_TIMEOUT="120",
        TMPDIR=str(spool),
    )
    log = tmp_path / "gunicorn.log"
    gunicorn_bin = Path(sys.executable).parent / "gunicorn"
    proc = subprocess.Popen(
        [str(gunicorn_bin), "auditor.wsgi:application", "-c", "docker/gunicorn.conf.py"],
        cwd=REPO,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for(lambda: _answers(port) or proc.poll() is not None, timeout=60)
        assert proc.poll() is None, log.read_text()[-3000:]
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _answers(port: int) -> bool:
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", "/accounts/login/")
        return c.getresponse().status == 200
    except OSError:
        return False


def _timed_login_page(port: int) -> float:
    started = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/accounts/login/")
    r = c.getresponse()
    r.read()
    assert r.status == 200
    return time.monotonic() - started


def test_slow_uploaders_do_not_starve_the_login_page(gunicorn, token):
    port = gunicorn
    stop = threading.Event()
    socks: list[socket.socket] = []

    def trickle() -> None:
        s = socket.create_connection(("127.0.0.1", port))
        socks.append(s)
        s.sendall(
            (
                "POST /api/uploads/?filename=slow.jsonl HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {token}\r\nContent-Type: application/x-ndjson\r\n"
                "Content-Length: 100000\r\n\r\n"
            ).encode()
        )
        while not stop.is_set():
            try:
                s.sendall(b" ")
            except OSError:
                return
            stop.wait(1.0)

    threads = [threading.Thread(target=trickle, daemon=True) for _ in range(SLOW_CLIENTS)]
    for t in threads:
        t.start()
    try:
        time.sleep(3)  # every slow client is being read by the app by now
        timings = [_timed_login_page(port) for _ in range(5)]
        assert max(timings) < 3.0, timings
    finally:
        stop.set()
        for s in socks:
            s.close()


def test_anonymous_multipart_is_refused_before_the_body_is_sent(gunicorn, project):
    """Before: CSRF middleware read (and Django spooled) the whole body before the redirect."""
    port = gunicorn
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(
            (
                f"POST /projects/{project.pk}/upload/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: multipart/form-data; boundary=xyz\r\n"
                f"Content-Length: {400 * 1024 * 1024}\r\n\r\n"  # under the size limit
                "--xyz\r\n"
            ).encode()
        )
        started = time.monotonic()
        head = s.recv(4096).decode(errors="replace")
        assert time.monotonic() - started < 5
    finally:
        s.close()
    status_line = head.split("\r\n", 1)[0]
    assert " 302 " in status_line, head
    assert "/accounts/login/" in head


def test_oversize_declared_body_is_413_before_it_is_sent(gunicorn, token, settings):
    s = socket.create_connection(("127.0.0.1", gunicorn), timeout=10)
    try:
        s.sendall(
            (
                "POST /api/uploads/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {token}\r\nContent-Type: application/x-ndjson\r\n"
                f"Content-Length: {settings.TA_MAX_UPLOAD_BYTES + 10 * 1024 * 1024}\r\n\r\n"
            ).encode()
        )
        head = s.recv(4096).decode(errors="replace")
    finally:
        s.close()
    assert " 413 " in head.split("\r\n", 1)[0], head


def test_chunked_upload_is_accepted(gunicorn, token):
    body = jsonl(simple_trace("chunked-1")) + jsonl(simple_trace("chunked-2"))
    c = http.client.HTTPConnection("127.0.0.1", gunicorn, timeout=30)
    pieces = [body[i : i + 100] for i in range(0, len(body), 100)]
    c.request(
        "POST",
        "/api/uploads/?filename=chunked.jsonl",
        body=iter(pieces),
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/x-ndjson",
            "Transfer-Encoding": "chunked",
        },
        encode_chunked=True,
    )
    r = c.getresponse()
    payload = r.read()
    assert r.status == 202, payload
    upload = Upload.objects.latest("pk")
    assert upload.size == len(body) and upload.filename == "chunked.jsonl"


def _spooled(tmp_path: Path) -> list[Path]:
    return [p for p in (tmp_path / "spool").rglob("*") if p.is_file()]


@pytest.mark.parametrize(
    "path,authorization,expect",
    [
        ("/api/uploads/?filename=x.jsonl", "Bearer ta_made_up", " 401 "),
        ("/api/uploads/?filename=x.jsonl", "Basic YWxpY2U6eA==", " 401 "),
        ("/api/uploads/?filename=x.jsonl", "Token", " 401 "),
        ("{upload_page}", "Bearer ta_made_up", " 302 "),
        ("{upload_page}", "Basic YWxpY2U6eA==", " 302 "),
    ],
)
def test_made_up_authorization_is_refused_before_the_body(
    gunicorn, project, tmp_path, path, authorization, expect
):
    """An anonymous client with a made-up Authorization header and a csrftoken cookie, sending
    a 400 MB multipart body slowly: the answer comes after the first bytes, and nothing of the
    body reaches a temporary file."""
    path = path.format(upload_page=f"/projects/{project.pk}/upload/")
    s = socket.create_connection(("127.0.0.1", gunicorn), timeout=10)
    try:
        s.sendall(
            (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: {authorization}\r\nCookie: csrftoken={'a' * 32}\r\n"
                "X-CSRFToken: " + "a" * 32 + "\r\n"
                "Content-Type: multipart/form-data; boundary=xyz\r\n"
                f"Content-Length: {400 * 1024 * 1024}\r\n\r\n"
                '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.jsonl"\r\n\r\n'
            ).encode()
        )
        started = time.monotonic()
        s.settimeout(5)
        for _ in range(3):  # a slow sender: a little of the body, then the answer is there
            s.sendall(b"x" * 1024)
            time.sleep(0.2)
        head = s.recv(4096).decode(errors="replace")
        assert time.monotonic() - started < 5
    finally:
        s.close()
    assert expect in head.split("\r\n", 1)[0], head
    time.sleep(0.5)
    assert _spooled(tmp_path) == []
