from __future__ import annotations

import csv

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.builders.v1 import jsonl, simple_trace
from traces.models import Membership, Upload
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db


@pytest.fixture
def done_upload(project):  # type: ignore[no-untyped-def]
    data = jsonl(simple_trace("a")) + b"not json\n"
    up, _ = upload_create(
        project=project, fileobj=data, filename="run.jsonl", source="web", enqueue=False
    )
    return upload_process(upload_id=up.pk)


def test_login_required(client, project):
    r = client.get(f"/projects/{project.pk}/")
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]


def test_outsider_gets_404_everywhere(client, charlie, project, done_upload):
    client.force_login(charlie)
    trace = done_upload.traces.get()
    for url in (
        f"/projects/{project.pk}/",
        f"/projects/{project.pk}/upload/",
        f"/projects/{project.pk}/traces/",
        f"/uploads/{done_upload.pk}/",
        f"/uploads/{done_upload.pk}/errors/",
        f"/uploads/{done_upload.pk}/raw/",
        f"/traces/{trace.pk}/",
    ):
        assert client.get(url).status_code == 404, url


def test_viewer_cannot_upload(client, charlie, project):
    Membership.objects.create(project=project, user=charlie, role="viewer")
    client.force_login(charlie)
    assert client.get(f"/projects/{project.pk}/upload/").status_code == 403


def test_upload_form_post_redirects_to_status(client, alice, project):
    client.force_login(alice)
    f = SimpleUploadedFile("run.jsonl", jsonl(simple_trace("a")))
    r = client.post(f"/projects/{project.pk}/upload/", {"file": f, "format": "auto"})
    up = Upload.objects.get()
    assert r.status_code == 302 and r["Location"] == up.get_absolute_url()


def test_upload_form_json_for_script(client, alice, project):
    client.force_login(alice)
    f = SimpleUploadedFile("run.jsonl", jsonl(simple_trace("a")))
    r = client.post(f"/projects/{project.pk}/upload/", {"file": f}, HTTP_ACCEPT="application/json")
    assert r.json()["url"] == Upload.objects.get().get_absolute_url()


def test_upload_form_error_is_shown(client, alice, project, settings):
    client.force_login(alice)
    settings.TA_MAX_UPLOAD_BYTES = 5
    f = SimpleUploadedFile("run.jsonl", b"0123456789")
    r = client.post(f"/projects/{project.pk}/upload/", {"file": f})
    assert r.status_code == 400 and b"TA_MAX_UPLOAD_BYTES" in r.content


def test_status_page_polls_until_done(client, alice, project):
    client.force_login(alice)
    up, _ = upload_create(
        project=project,
        fileobj=jsonl(simple_trace("a")),
        filename="r.jsonl",
        source="web",
        enqueue=False,
    )
    pending = client.get(up.get_absolute_url())
    assert b'hx-trigger="every 1s"' in pending.content
    upload_process(upload_id=up.pk)
    fragment = client.get(up.get_absolute_url(), HTTP_HX_REQUEST="true")
    assert b"<html" not in fragment.content  # just the partial
    assert b'id="status"' in fragment.content and b"hx-trigger" not in fragment.content
    assert b'id="traces-accepted">1<' in fragment.content


def test_status_page_shows_errors_and_report_downloads(client, alice, done_upload):
    client.force_login(alice)
    page = client.get(done_upload.get_absolute_url())
    assert b"not valid JSON" in page.content
    js = client.get(f"/uploads/{done_upload.pk}/errors/")
    assert js["Content-Disposition"].startswith("attachment") and js.json()["error_count"] == 1
    r = client.get(f"/uploads/{done_upload.pk}/errors/?format=csv")
    rows = list(csv.reader(r.content.decode().splitlines()))
    assert rows[0] == ["line", "trace_id", "path", "message"]
    assert rows[1][:3] == ["8", "", "$"] and rows[1][3].startswith("not valid JSON")


def test_raw_download_is_the_original_bytes(client, alice, done_upload):
    client.force_login(alice)
    r = client.get(f"/uploads/{done_upload.pk}/raw/")
    assert b"".join(r.streaming_content) == jsonl(simple_trace("a")) + b"not json\n"


def test_trace_page_shows_content_escaped(client, alice, project):
    client.force_login(alice)
    events = simple_trace("a")
    events[1]["content"] = "<script>alert('x')</script>"
    up, _ = upload_create(
        project=project, fileobj=jsonl(events), filename="r.jsonl", source="web", enqueue=False
    )
    upload_process(upload_id=up.pk)
    r = client.get(up.traces.get().get_absolute_url())
    assert r.status_code == 200
    assert b"<script>alert" not in r.content and b"&lt;script&gt;alert" in r.content


def test_trace_list_paginates_by_keyset(client, alice, project):
    client.force_login(alice)
    events = [e for i in range(55) for e in simple_trace(f"t{i:02d}", n_calls=0)]
    up, _ = upload_create(
        project=project, fileobj=jsonl(events), filename="r.jsonl", source="web", enqueue=False
    )
    upload_process(upload_id=up.pk)
    first = client.get(f"/projects/{project.pk}/traces/")
    rows = first.context["rows"]
    assert len(rows) == 50
    second = client.get(f"/projects/{project.pk}/traces/{first.context['next_url']}")
    rest = second.context["rows"]
    assert len(rest) == 5 and second.context["next_url"] is None
    seen = [r["trace"].external_id for r in rows + rest]
    assert sorted(seen) == [f"t{i:02d}" for i in range(55)]  # no duplicate, no gap


def test_failed_upload_can_be_retried(client, alice, project, settings):
    client.force_login(alice)
    settings.TA_MAX_GZIP_RATIO = 10.0
    import gzip

    up, _ = upload_create(
        project=project,
        fileobj=gzip.compress(b" " * (20 << 20)),
        filename="b.gz",
        source="web",
        enqueue=False,
    )
    up = upload_process(upload_id=up.pk)
    assert up.status == "failed"
    r = client.post(f"/uploads/{up.pk}/retry/")
    up.refresh_from_db()
    assert r.status_code == 302 and up.status == "pending"


def test_format_docs_and_schema(client):
    assert client.get("/docs/format/").status_code == 200
    r = client.get("/schema/trace-v1.json")
    assert r.status_code == 200 and r.json()["title"]


def test_security_headers(client, alice, project):
    client.force_login(alice)
    r = client.get(f"/projects/{project.pk}/")
    csp = r["Content-Security-Policy"]
    assert (
        "script-src 'self'" in csp
        and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    )
    assert r["X-Frame-Options"] == "DENY"


def test_token_shown_once(client, alice, project):
    client.force_login(alice)
    client.post(f"/projects/{project.pk}/tokens/", {"name": "ci"})
    first = client.get(f"/projects/{project.pk}/")
    assert b'id="new-token">ta_' in first.content
    second = client.get(f"/projects/{project.pk}/")
    assert b'id="new-token"' not in second.content
