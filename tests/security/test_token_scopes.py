"""Project tokens: upload-only by default, read on request, expiry, last-used time, shown to
owners on the project page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from auditor.exports.services import export_build, export_create
from tests.builders.v1 import jsonl, simple_trace
from traces.models import Membership, ProjectToken, Trace, Upload
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db


def _api(raw: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return c


@pytest.fixture
def filled(project):  # type: ignore[no-untyped-def]
    up, _ = upload_create(
        project=project,
        fileobj=jsonl(simple_trace("t1")),
        filename="a.jsonl",
        source="cli",
        enqueue=False,
    )
    upload_process(upload_id=up.pk)
    export = export_create(project=project, format="jsonl", enqueue=False)
    export_build(export_id=export.pk)
    return project, Trace.objects.get(project=project), export


def test_a_new_token_is_upload_only(project):
    token, _raw = ProjectToken.issue(project=project, name="agent")
    assert token.scope == "upload" and not token.allows("read") and token.allows("upload")


def test_upload_only_token_uploads_but_cannot_read_traces_or_exports(upload_token, filled):
    _project, trace, export = filled
    api = _api(upload_token)
    r = api.post(
        "/api/uploads/", data=jsonl(simple_trace("new")), content_type="application/x-ndjson"
    )
    assert r.status_code == 202, r.content
    assert api.get(r.json()["status_url"]).status_code == 200  # it follows its upload
    assert api.get("/api/uploads/").status_code == 200
    for url in [
        "/api/traces/",
        f"/api/traces/{trace.pk}/",
        f"/api/traces/{trace.pk}/events/",
        reverse("exports:api-list"),
        reverse("exports:api-detail", args=[export.pk]),
        reverse("exports:api-download", args=[export.pk]),
    ]:
        r = api.get(url)
        assert r.status_code == 403, (url, r.status_code)
        assert "read or write scope" in r.json()["detail"]


def test_read_token_reads(token, filled):
    _project, trace, export = filled
    api = _api(token)
    assert api.get(f"/api/traces/{trace.pk}/events/").status_code == 200
    assert api.get(reverse("exports:api-download", args=[export.pk])).status_code == 200


def test_expired_token_is_refused(project):
    _t, raw = ProjectToken.issue(
        project=project, name="old", expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert _api(raw).get("/api/uploads/").status_code == 401
    _t, live = ProjectToken.issue(
        project=project, name="new", expires_at=timezone.now() + timedelta(days=1)
    )
    assert _api(live).get("/api/uploads/").status_code == 200


def test_last_used_is_recorded(project, upload_token):
    t = ProjectToken.objects.get(name="uploader")
    assert t.last_used_at is None
    assert _api(upload_token).get("/api/uploads/").status_code == 200
    t.refresh_from_db()
    assert t.last_used_at is not None and timezone.now() - t.last_used_at < timedelta(minutes=1)


def test_owner_creates_scoped_expiring_token_and_sees_it(client, alice, project):
    client.force_login(alice)
    r = client.post(
        f"/projects/{project.pk}/tokens/", {"name": "reader", "scope": "read", "expires_days": "7"}
    )
    assert r.status_code == 302
    t = ProjectToken.objects.get(name="reader")
    assert t.scope == "read"
    assert timedelta(days=6) < t.expires_at - timezone.now() <= timedelta(days=7)
    page = client.get(project.get_absolute_url()).content.decode()
    assert "read only" in page and "never used" in page
    assert f"expires {t.expires_at:%Y-%m-%d}" in page
    bad = client.post(f"/projects/{project.pk}/tokens/", {"name": "x", "scope": "admin"})
    assert bad.status_code == 302 and not ProjectToken.objects.filter(name="x").exists()
    bad = client.post(f"/projects/{project.pk}/tokens/", {"name": "y", "expires_days": "-3"})
    assert not ProjectToken.objects.filter(name="y").exists()


def test_tokens_are_shown_to_owners_only(client, project, upload_token, django_user_model):
    ann = django_user_model.objects.create_user("ann", password="ann-pw")
    Membership.objects.create(project=project, user=ann, role=Membership.Role.ANNOTATOR)
    client.force_login(ann)
    page = client.get(project.get_absolute_url()).content.decode()
    assert "uploader" not in page and "Upload tokens" not in page


def test_read_token_changes_nothing(project, filled):
    """A `read` token reads; every write — upload, audit start, export create, delete — is a
    403, decided before the body is parsed."""
    _project, trace, export = filled
    _t, raw = ProjectToken.issue(project=project, name="reader", scope="read")
    api = _api(raw)
    assert api.get(f"/api/traces/{trace.pk}/").status_code == 200
    assert api.get("/api/uploads/").status_code == 200
    writes = [
        api.post(
            "/api/uploads/", data=jsonl(simple_trace("new")), content_type="application/x-ndjson"
        ),
        api.post("/api/audits/", {"project": project.name}, format="json"),
        api.post(
            reverse("exports:api-list"), {"project": project.name, "format": "csv"}, format="json"
        ),
        api.delete(reverse("exports:api-detail", args=[export.pk])),
        api.delete(f"/api/traces/{trace.pk}/"),
        api.put(f"/api/uploads/{trace.upload_id}/", {}, format="json"),
    ]
    for r in writes:
        assert r.status_code == 403, (r.request["PATH_INFO"], r.status_code, r.content)
    assert "may only read" in writes[0].json()["detail"]
    assert Upload.objects.filter(project=project).count() == 1


def test_write_token_uploads_and_reads(project, filled):
    _project, trace, _export = filled
    _t, raw = ProjectToken.issue(project=project, name="writer", scope="write")
    api = _api(raw)
    r = api.post(
        "/api/uploads/", data=jsonl(simple_trace("new")), content_type="application/x-ndjson"
    )
    assert r.status_code == 202, r.content
    assert api.get(f"/api/traces/{trace.pk}/events/").status_code == 200
