from __future__ import annotations

import gzip

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from tests.builders.v1 import jsonl, simple_trace
from traces.models import ProjectToken, Upload
from traces.services import upload_process

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(token):  # type: ignore[no-untyped-def]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_multipart_upload_answers_202_with_status_url(api, project):
    f = SimpleUploadedFile(
        "run.jsonl", jsonl(simple_trace("a")), content_type="application/x-ndjson"
    )
    r = api.post("/api/uploads/", {"file": f}, format="multipart")
    assert r.status_code == 202, r.content
    body = r.json()
    assert body["status"] == "pending" and body["duplicate"] is False
    assert body["status_url"].endswith(f"/api/uploads/{body['id']}/")
    assert r["Location"] == body["status_url"]
    assert Upload.objects.get(pk=body["id"]).project == project


def test_raw_body_upload_gzip(api):
    data = gzip.compress(jsonl(simple_trace("a")))
    r = api.post(
        "/api/uploads/?filename=run.jsonl.gz&format=v1", data=data, content_type="application/gzip"
    )
    assert r.status_code == 202, r.content
    upload_process(upload_id=r.json()["id"])
    status = api.get(r.json()["status_url"]).json()
    assert (status["status"], status["traces_accepted"], status["events"]) == ("done", 1, 7)


def test_identical_reupload_answers_200_duplicate(api):
    data = jsonl(simple_trace("a"))
    first = api.post("/api/uploads/", data=data, content_type="application/x-ndjson")
    again = api.post("/api/uploads/", data=data, content_type="application/x-ndjson")
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["id"] == first.json()["id"]


def test_status_shows_errors(api):
    bad = jsonl(simple_trace("a")) + b'{"trace_id": "b", "type": "message", "role": "robot"}\n'
    r = api.post("/api/uploads/", data=bad, content_type="application/x-ndjson")
    upload_process(upload_id=r.json()["id"])
    body = api.get(r.json()["status_url"]).json()
    assert body["traces_rejected"] == 1
    assert body["errors"] == [
        {
            "line": 8,
            "trace_id": "b",
            "path": "$.role",
            "message": 'expected one of system, user, assistant, found a string "robot"',
        }
    ]


def test_too_large_is_413_with_message(api, settings):
    settings.TA_MAX_UPLOAD_BYTES = 10
    r = api.post("/api/uploads/", data=b"x" * 100, content_type="application/x-ndjson")
    assert r.status_code == 413 and "TA_MAX_UPLOAD_BYTES" in r.json()["detail"]


def test_unknown_format_is_400(api):
    r = api.post("/api/uploads/?format=yaml", data=b"x", content_type="application/x-ndjson")
    assert r.status_code == 400 and "unknown format" in r.json()["detail"]


def test_empty_body_is_400(api):
    r = api.post("/api/uploads/", data=b"", content_type="application/x-ndjson")
    assert r.status_code == 400 and "empty" in r.json()["detail"]


def test_multipart_without_file_is_400(api):
    r = api.post("/api/uploads/", {"format": "v1"}, format="multipart")
    assert r.status_code == 400 and "file" in r.json()


def test_no_token_is_401():
    r = APIClient().post("/api/uploads/", data=b"x", content_type="application/x-ndjson")
    assert r.status_code in (401, 403)


def test_revoked_token_is_401(project, token):
    from django.utils import timezone

    ProjectToken.objects.update(revoked_at=timezone.now())
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    r = client.post("/api/uploads/", data=b"x", content_type="application/x-ndjson")
    assert r.status_code == 401 and "revoked" in r.json()["detail"]


def test_token_cannot_see_other_projects_upload(api, charlie):
    from traces.models import Project

    other = Project.objects.create(name="beta")
    up = Upload.objects.create(project=other, filename="x", size=1, content_hash="h", source="api")
    assert api.get(f"/api/uploads/{up.pk}/").status_code == 404


def test_token_is_stored_hashed(project, token):
    stored = ProjectToken.objects.get()
    assert token not in (stored.digest, stored.hint) and stored.digest != token
    assert ProjectToken.lookup(token) == stored


def test_session_user_uploads_by_project_name(client, alice, project):
    client.force_login(alice)
    r = client.post(
        "/api/uploads/?project=alpha",
        data=jsonl(simple_trace("a")),
        content_type="application/x-ndjson",
    )
    assert r.status_code == 202


def test_outsider_session_cannot_upload(client, charlie, project):
    client.force_login(charlie)
    r = client.post("/api/uploads/?project=alpha", data=b"x", content_type="application/x-ndjson")
    assert r.status_code == 404


def test_traces_and_events_api(api):
    r = api.post(
        "/api/uploads/", data=jsonl(simple_trace("a")), content_type="application/x-ndjson"
    )
    upload_process(upload_id=r.json()["id"])
    [trace] = api.get("/api/traces/").json()
    assert trace["trace_id"] == "a" and trace["event_count"] == 7
    # the file gives no timing, tokens or cost: null, never 0
    assert [trace[k] for k in ("duration_ms", "total_tokens", "cost_usd")] == [None] * 3
    events = api.get(f"/api/traces/{trace['id']}/events/").json()
    assert [e["seq"] for e in events] == list(range(7))
    assert events[2]["payload"]["arguments"] == {"path": "/d0"}


def test_openapi_schema_served(api):
    r = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert r.status_code == 200
    assert b"/api/uploads/" in r.content


def test_status_is_failed_when_every_line_was_rejected(api):
    """The page calls an upload that stored nothing "failed"; the API says the same."""
    bad = b'{"trace_id": "b", "type": "message", "role": "robot"}\n'
    r = api.post("/api/uploads/", data=bad, content_type="application/x-ndjson")
    upload_process(upload_id=r.json()["id"])
    body = api.get(r.json()["status_url"]).json()
    assert Upload.objects.get(pk=body["id"]).status == "done"  # the job itself finished
    assert (body["status"], body["shown_status"], body["traces_accepted"]) == (
        "failed",
        "failed",
        0,
    )
    listed = {u["id"]: u for u in api.get("/api/uploads/").json()}
    assert listed[body["id"]]["status"] == "failed"


def test_status_stays_done_when_some_traces_were_stored(api):
    bad = jsonl(simple_trace("a")) + b'{"trace_id": "b", "type": "message", "role": "robot"}\n'
    r = api.post("/api/uploads/", data=bad, content_type="application/x-ndjson")
    upload_process(upload_id=r.json()["id"])
    body = api.get(r.json()["status_url"]).json()
    assert (body["status"], body["shown_status"]) == ("done", "done with errors")
