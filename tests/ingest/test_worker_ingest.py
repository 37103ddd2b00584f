"""Ingestion end to end through a real Celery worker process, PostgreSQL and Redis."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest
from rest_framework.test import APIClient

from tests.builders.v1 import jsonl, simple_trace
from tests.conftest import REPO, _db_url, wait_for
from traces.models import Event, Trace, Upload
from traces.services import upload_create

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def finished(upload_id: int) -> Upload | None:
    up = Upload.objects.get(pk=upload_id)
    return up if up.is_finished else None


def test_rest_upload_is_processed_by_the_worker(celery_worker_process, project, token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    bad = {"trace_id": "bad", "type": "tool_call", "name": "f", "arguments": []}
    data = gzip.compress(jsonl(simple_trace("a") + simple_trace("b") + [bad]))
    r = client.post(
        "/api/uploads/?filename=run.jsonl.gz", data=data, content_type="application/gzip"
    )
    assert r.status_code == 202
    up = wait_for(lambda: finished(r.json()["id"]))
    assert (up.status, up.traces_accepted, up.traces_rejected, up.events) == ("done", 2, 1, 14)
    body = client.get(r.json()["status_url"]).json()
    assert body["errors"][0]["path"] == "$.arguments"
    # COPY wrote the events, in order, with hot columns filled.
    assert list(
        Event.objects.filter(trace__external_id="a", type="tool_call").values_list(
            "name", flat=True
        )
    ) == ["ls", "ls"]


def test_cli_ingest_waits_for_the_worker(celery_worker_process, project, tmp_path, postgres):
    path = tmp_path / "run.jsonl"
    path.write_bytes(jsonl(simple_trace("x") + simple_trace("y")) + b"garbage\n")
    env = dict(
        os.environ,
        DATABASE_URL=_db_url(postgres),
        TA_MEDIA_ROOT=celery_worker_process.env["TA_MEDIA_ROOT"],
        CELERY_BROKER_URL=celery_worker_process.env["CELERY_BROKER_URL"],
    )
    out = subprocess.run(
        [sys.executable, "manage.py", "ingest", str(path), "--project", project.name, "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1, out.stderr  # one bad line: exit 1, but the traces are stored
    result = json.loads(out.stdout)
    assert result["traces_accepted"] == 2 and result["traces_rejected"] == 0
    assert result["events"] == 14 and result["duplicate"] is False
    assert result["errors"] == [
        {
            "file": str(path),
            "line": 15,
            "trace_id": None,
            "path": "$",
            "message": result["errors"][0]["message"],
        }
    ]
    assert result["errors"][0]["message"].startswith("not valid JSON")
    assert Trace.objects.filter(project=project).count() == 2

    again = subprocess.run(
        [sys.executable, "manage.py", "ingest", str(path), "--project", project.name, "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(again.stdout)["duplicate"] is True
    assert Trace.objects.filter(project=project).count() == 2


def test_cli_inline_runs_without_worker(project, tmp_path, postgres):
    path = tmp_path / "run.jsonl"
    path.write_bytes(jsonl(simple_trace("solo")))
    env = dict(os.environ, DATABASE_URL=_db_url(postgres))
    out = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "ingest",
            str(path),
            "--project",
            project.name,
            "--inline",
            "--json",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["traces_accepted"] == 1


def test_a_finished_upload_becomes_searchable(celery_worker_process, project, alice):
    """The worker indexes a finished upload for full-text search in a task of its own."""
    from traces import search

    events = simple_trace("s")
    events[1]["content"] = "the quokka audit"
    up, _ = upload_create(project=project, fileobj=jsonl(events), filename="s.jsonl", source="api")
    wait_for(lambda: finished(up.pk))
    found = lambda: search.traces_matching(Trace.objects.filter(project=project), "quokka")  # noqa: E731
    wait_for(lambda: found().exists(), timeout=30)
    assert not search.traces_matching(Trace.objects.filter(project=project), "wombat").exists()
