"""The probe's exfiltration, tried by an annotator and by an owner against a listener on
127.0.0.1 that records every request, through the API, the form, the endpoint API and a real
Celery worker: no server secret (``SECRET_KEY``, ``DATABASE_URL``, ``CELERY_BROKER_URL``) and
no file content (``/etc/hostname``, a multi-line key file) is ever received, and none of it —
nor the listener's own non-JSON answer — appears in any page or stored record."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from auditor.models import (
    AuditItem,
    AuditResult,
    AuditRun,
    ModelCallRecord,
    ModelEndpoint,
    RunModelUsage,
)
from auditor.runs.services import audit_run_create
from tests.conftest import N_TRACES, wait_for
from traces.models import Membership

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

ADMIN_TOKEN = "internal-admin-token-5f1e0c9a77d2"
OWN_KEY = "sk-owners-own-endpoint-key-000000"


class Recorder:
    """An HTTP listener that records every request (request line, headers, body) and answers
    502 with a page holding an internal token, as an internal service might."""

    def __init__(self) -> None:
        received = self.received = []  # type: list[bytes]

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                received.append(self.requestline.encode() + bytes(self.headers) + body)
                page = f"<html>admin console, token {ADMIN_TOKEN}</html>".encode()
                self.send_response(502)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            do_GET = do_POST  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def recorder() -> Iterator[Recorder]:
    r = Recorder()
    yield r
    r.stop()


@pytest.fixture()
def secrets(tmp_path: Path) -> dict[str, str]:
    multi = tmp_path / "key-file"
    multi.write_text("first-line-of-a-secret-file\nsecond-line-secret-9f8e7d\n")
    single = tmp_path / "single-line-key"
    single.write_text("single-line-file-secret-3c4d5e\n")
    # /etc/hostname is tried too; its text is checked in the Authorization header only when it
    # is too short to look for anywhere (a two-letter name is in any page)
    hostname = Path("/etc/hostname").read_text().strip()
    return {
        "single": "single-line-file-secret-3c4d5e",
        "single_path": str(single),
        "secret_key": django_settings.SECRET_KEY,
        "database_url": os.environ["DATABASE_URL"],
        "broker_url": os.environ["CELERY_BROKER_URL"],
        "hostname": hostname,
        "multi_1": "first-line-of-a-secret-file",
        "multi_2": "second-line-secret-9f8e7d",
        "multi_path": str(multi),
    }


def attempts(recorder: Recorder, single_path: str, multi_path: str) -> list[dict]:
    """The probe's model settings: the listener's URL with a server variable or file as key."""
    return [
        {"base_url": recorder.url, "model": "m", "api_key_env": name, "uses": ["judge"]}
        for name in ("DJANGO_SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL")
    ] + [
        {"base_url": recorder.url, "model": "m", "api_key_file": path, "uses": ["judge"]}
        for path in ("/etc/hostname", single_path, multi_path)
    ]


def test_annotator_and_owner_exfiltration_gets_nothing(
    celery_worker_process,
    lock_project,
    client,
    alice,
    django_user_model,
    recorder,
    secrets,
    settings,
):
    annie = django_user_model.objects.create_user("annie", password="pw")
    Membership.objects.create(project=lock_project, user=annie, role=Membership.Role.ANNOTATOR)
    runs_api = reverse("auditor:api-runs")
    endpoints_api = reverse("auditor:api-model-endpoints", args=[lock_project.pk])
    form = reverse("auditor:run-new", args=[lock_project.pk])
    answers: list[str] = []

    # 1. Both roles, every channel, with the operator's default (no allowed hosts).
    for user in (annie, alice):
        client.force_login(user)
        for model in attempts(recorder, secrets["single_path"], secrets["multi_path"]):
            body = {"project": lock_project.name, "judge": "llm", "model": model}
            r = client.post(runs_api, body, "application/json")
            assert r.status_code == 400, r.content
            assert "not accepted" in r.content.decode() and "endpoint" in r.content.decode()
            answers.append(r.content.decode())
            fields = {f"model_{k}": v for k, v in model.items() if k != "uses"}
            r = client.post(form, {"judge": "llm", "model_uses": ["judge"], **fields})
            assert r.status_code == 400
            answers.append(r.content.decode())
            key_field = {k: v for k, v in model.items() if k.startswith("api_key")}
            ep = {"name": "x", "base_url": recorder.url, "model": "m", **key_field}
            r = client.post(endpoints_api, ep, "application/json")
            assert r.status_code == (403 if user == annie else 400)
            answers.append(r.content.decode())
        # the listener itself, as an endpoint: refused for the owner (loopback), 403 for annie
        r = client.post(
            endpoints_api, {"name": "x", "base_url": recorder.url, "model": "m"}, "application/json"
        )
        assert r.status_code == (403 if user == annie else 400)
        if user == alice:
            assert "127.0.0.1 is a loopback address" in r.content.decode()
    assert not AuditRun.objects.exists() and not ModelEndpoint.objects.exists()

    # 2. The operator allows 127.0.0.1 (as the session's worker does): the owner's own
    # endpoint at the listener gets requests — carrying the owner's key, nothing of the server.
    settings.TA_MODEL_ALLOWED_HOSTS = "127.0.0.1"
    client.force_login(alice)
    r = client.post(
        endpoints_api,
        {"name": "listener", "base_url": recorder.url, "model": "m", "key": OWN_KEY},
        "application/json",
    )
    assert r.status_code == 201, r.content
    body = {
        "project": lock_project.name,
        "policies": ["twincheck"],
        "judge": "llm",
        "model": {"endpoint": "listener", "options": {"max_retries": 0, "timeout": 2}},
    }
    client.force_login(annie)
    assert client.post(runs_api, body, "application/json").status_code == 403
    client.force_login(alice)
    r = client.post(runs_api, body, "application/json")
    assert r.status_code == 202, r.content
    run_id = r.json()["run"]
    wait_for(lambda: AuditRun.objects.get(pk=run_id).status == "done", timeout=120)
    assert len(recorder.received) == 2 * N_TRACES
    assert all(f"Bearer {OWN_KEY}".encode() in raw for raw in recorder.received)

    # 3. A stored endpoint whose name now means this machine (as after a DNS change) is
    # refused by the worker at request time: nothing more arrives.
    moved = ModelEndpoint.objects.create(
        project=lock_project, name="moved", base_url=f"http://localhost:{recorder.port}/v1"
    )
    model_settings = {
        "endpoint": {"base_url": moved.base_url, "model": "m2", "max_retries": 0},
        "uses": ["judge"],
        "endpoint_id": moved.pk,
        "endpoint_name": "moved",
    }
    refused = audit_run_create(
        project=lock_project, policies=["twincheck"], judge="llm", model_settings=model_settings
    )
    wait_for(lambda: AuditRun.objects.get(pk=refused.pk).status == "done", timeout=120)
    assert len(recorder.received) == 2 * N_TRACES
    errors = [
        j["error"]
        for res in AuditResult.objects.filter(run=refused)
        for d in res.record["decisions"]
        for j in d["judgments"]
    ]
    assert errors and all("refused: base_url: localhost names this machine" in e for e in errors)
    failed = [
        j["error"]
        for res in AuditResult.objects.filter(run_id=run_id)
        for d in res.record["decisions"]
        for j in d["judgments"]
    ]
    assert failed and all("the endpoint answered with non-JSON (HTTP 502" in e for e in failed)

    # 4. Nothing of the server's secrets, the files or the listener's page anywhere.
    pages = []
    for user in (alice, annie):
        client.force_login(user)
        for run in AuditRun.objects.all():
            pages.append(client.get(reverse("auditor:run", args=[run.pk])).content.decode())
            pages.append(client.get(reverse("auditor:api-run", args=[run.pk])).content.decode())
        for res in AuditResult.objects.all()[:4]:
            pages.append(client.get(reverse("auditor:trace", args=[res.trace_id])).content.decode())
    stored = json.dumps(
        [
            list(AuditRun.objects.values()),
            list(AuditResult.objects.values("record", "guarded_trajectory")),
            list(AuditItem.objects.values("error")),
            list(ModelCallRecord.objects.values()),
            list(RunModelUsage.objects.values()),
        ],
        default=str,
    )
    received = b"".join(recorder.received).decode("utf-8", "replace")
    texts = {
        "stored": stored,
        "received": received,
        **{f"answer{i}": a for i, a in enumerate(answers)},
    }
    texts.update({f"page{i}": p for i, p in enumerate(pages)})
    for what, text in texts.items():
        for name, secret in secrets.items():
            if name.endswith("_path") and what.startswith("answer"):
                continue  # the form may echo the path the user typed; it never reads it
            if name == "hostname" and len(secret) < 8:
                assert f"Bearer {secret}" not in text, what
                continue
            assert secret not in text, (what, name)
        assert ADMIN_TOKEN not in text, what
        if what != "received":
            assert OWN_KEY not in text, what
