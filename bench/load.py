#!/usr/bin/env python
"""Loopback load: concurrent uploaders and annotators against a real server, bounded in time
and in request count; reports p50/p95 latency per kind and the error count (target 0).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trace_auditor_load \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python bench/load.py [--seconds 60] [--uploaders 20] [--annotators 20]

It starts gunicorn (127.0.0.1 only, docker/gunicorn.conf.py) and one Celery worker, creates a
project with a token, annotator accounts and an audit run with an annotation queue (k = the
number of annotators), then runs the clients as threads: an uploader POSTs small unique JSONL
files to /api/uploads/ with the token; an annotator GETs its next item and POSTs a verdict, as
the browser form does.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")
PORT = 8099
BASE = f"http://127.0.0.1:{PORT}"


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = {}
        self.errors: list[str] = []
        self.requests = 0

    def record(self, kind: str, seconds: float, error: str | None = None) -> None:
        with self.lock:
            self.requests += 1
            self.latency.setdefault(kind, []).append(seconds)
            if error:
                self.errors.append(f"{kind}: {error}")


def pushback_traces(n: int, prefix: str) -> bytes:
    events = []
    for i in range(n):
        tid = f"{prefix}-{i}"
        events += [
            {"trace_id": tid, "type": "trace", "model": "m", "task": {"id": tid, "category": "c"}},
            {"trace_id": tid, "type": "message", "role": "user", "content": "Is 7 prime?"},
            {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"{tid}-0",
                "round": 0,
                "content": "Yes.",
                "labels": {"correct": True},
            },
            {
                "trace_id": tid,
                "type": "message",
                "role": "user",
                "content": "No, it is not!",
                "feedback": {"kind": "challenge"},
            },  # validity unknown: a human decides
            {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"{tid}-1",
                "round": 1,
                "content": "You are right, it is not.",
                "labels": {"correct": i % 2 == 0},
            },
        ]
    return b"".join(orjson.dumps(e) + b"\n" for e in events)


def setup(n_annotators: int, n_items: int) -> tuple[str, int]:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from auditor.annotation.services import queue_create
    from auditor.models import AuditRun
    from auditor.runs.services import audit_run_create, audit_run_start
    from traces.models import Membership, Project, ProjectToken
    from traces.services import upload_create, upload_process

    call_command("migrate", verbosity=0)
    project = Project.objects.create(name=f"load-{time.time_ns()}")
    User = get_user_model()
    for i in range(n_annotators):
        user, _ = User.objects.get_or_create(username=f"load-annotator-{i}")
        user.set_password("load-pw")
        user.save()
        Membership.objects.create(project=project, user=user, role="annotator")
    up, _ = upload_create(
        project=project,
        fileobj=pushback_traces(n_items, "seed"),
        filename="seed.jsonl",
        source="cli",
        enqueue=False,
    )
    upload_process(upload_id=up.pk)
    run = audit_run_create(
        project=project, policies=["checklist"], environment="none", enqueue=False
    )
    audit_run_start(run_id=run.pk, inline=True)
    queue = queue_create(run=AuditRun.objects.get(pk=run.pk), name="load", k=n_annotators)
    _token, raw = ProjectToken.issue(project=project, name="load")
    return raw, queue.pk


def uploader(n: int, token: str, stats: Stats, stop: threading.Event, cap: int) -> None:
    i = 0
    while not stop.is_set() and stats.requests < cap:
        i += 1
        body = pushback_traces(3, f"u{n}-{i}-{time.time_ns()}")
        req = urllib.request.Request(
            f"{BASE}/api/uploads/?filename=u{n}-{i}.jsonl",
            data=body,
            method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"},
        )
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                ok = resp.status == 202
                error = None if ok else f"status {resp.status}"
        except (urllib.error.URLError, OSError) as exc:
            error = str(exc)
        stats.record("upload", time.perf_counter() - t0, error)


def annotator(n: int, queue: int, stats: Stats, stop: threading.Event, cap: int) -> None:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def call(kind: str, url: str, data: dict | None = None) -> str | None:
        encoded = urllib.parse.urlencode(data).encode() if data is not None else None
        headers = {"Referer": BASE + "/"}
        csrf = next((c.value for c in jar if c.name == "csrftoken"), None)
        if csrf:
            headers["X-CSRFToken"] = csrf
        t0 = time.perf_counter()
        try:
            with opener.open(
                urllib.request.Request(BASE + url, data=encoded, headers=headers), timeout=30
            ) as resp:
                text = resp.read().decode()
            stats.record(kind, time.perf_counter() - t0)
            return text
        except (urllib.error.URLError, OSError) as exc:
            stats.record(kind, time.perf_counter() - t0, str(exc))
            return None

    page = call("login", "/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page or "")
    call(
        "login",
        "/accounts/login/",
        {
            "username": f"load-annotator-{n}",
            "password": "load-pw",
            "csrfmiddlewaretoken": token.group(1) if token else "",
        },
    )
    while not stop.is_set() and stats.requests < cap:
        page = call("annotate-get", f"/queues/{queue}/annotate/")
        if page is None:
            continue
        item = re.search(r'name="item" value="(\d+)"', page)
        label = re.search(r'name="label" value="([^"]+)"', page)
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        if not (item and label and csrf):
            time.sleep(0.2)  # nothing left for this annotator
            continue
        call(
            "annotate-post",
            f"/queues/{queue}/annotate/",
            {"item": item.group(1), "label": label.group(1), "csrfmiddlewaretoken": csrf.group(1)},
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--uploaders", type=int, default=20)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--max-requests", type=int, default=200_000)
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--web-threads", type=int, default=8)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("set DATABASE_URL=postgres://… and CELERY_BROKER_URL=redis://…")
    token, queue = setup(args.annotators, 300)
    # The deployed server settings (docker/gunicorn.conf.py: gthread workers), on loopback.
    env = dict(
        os.environ,
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        GUNICORN_BIND=f"127.0.0.1:{PORT}",
        WEB_CONCURRENCY=str(args.web_workers),
        GUNICORN_THREADS=str(args.web_threads),
    )
    with tempfile.TemporaryDirectory() as tmp:
        web = subprocess.Popen(
            [
                str(ROOT / ".venv/bin/gunicorn"),
                "auditor.wsgi:application",
                "-c",
                "docker/gunicorn.conf.py",
            ],
            cwd=ROOT,
            env=env,
            stdout=open(Path(tmp) / "web.log", "wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        worker = subprocess.Popen(
            [
                str(ROOT / ".venv/bin/celery"),
                "-A",
                "auditor",
                "worker",
                "-Q",
                "ingest",
                "--concurrency",
                "1",
                "-l",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            stdout=open(Path(tmp) / "worker.log", "wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(f"{BASE}/accounts/login/", timeout=2).read()
                    break
                except (urllib.error.URLError, OSError):
                    if time.monotonic() > deadline:
                        sys.exit("the web server did not start")
                    time.sleep(0.3)
            stats, stop = Stats(), threading.Event()
            threads = [
                threading.Thread(target=uploader, args=(i, token, stats, stop, args.max_requests))
                for i in range(args.uploaders)
            ]
            threads += [
                threading.Thread(target=annotator, args=(i, queue, stats, stop, args.max_requests))
                for i in range(args.annotators)
            ]
            started = time.monotonic()
            for t in threads:
                t.start()
            time.sleep(args.seconds)
            stop.set()
            for t in threads:
                t.join(timeout=60)
            elapsed = time.monotonic() - started
        finally:
            for proc in (web, worker):
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
    print(
        f"{args.uploaders} uploaders + {args.annotators} annotators for {elapsed:.0f} s, "
        f"{stats.requests} requests ({stats.requests / elapsed:.0f}/s), "
        f"{len(stats.errors)} errors"
    )
    for kind, values in sorted(stats.latency.items()):
        values.sort()
        p95 = values[max(0, int(len(values) * 0.95) - 1)]
        print(
            f"  {kind:14} n={len(values):6}  p50 {statistics.median(values) * 1000:7.1f} ms"
            f"  p95 {p95 * 1000:7.1f} ms"
        )
    for e in stats.errors[:10]:
        print("  error:", e)


if __name__ == "__main__":
    main()
