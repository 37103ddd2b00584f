"""Errors that scale: identical line errors grouped with their line ranges and counts; an upload
that stored nothing is "failed"; a near miss of a known event type is an error that names it; a
file that is not JSON is told so; owners dismiss failed uploads from Needs attention; a viewer
opening the upload form gets a page that says why, not a bare 403."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.builders.v1 import jsonl, simple_trace
from traces.error_groups import group_errors, line_ranges
from traces.models import Membership, Upload
from traces.services import upload_create, upload_process
from traces.validate import near_miss_type

pytestmark = pytest.mark.django_db


def _ingest(project, fileobj, name):  # type: ignore[no-untyped-def]
    up, _ = upload_create(
        project=project, fileobj=fileobj, filename=name, source="cli", enqueue=False
    )
    return upload_process(upload_id=up.pk)


def _all_bad(n: int) -> list[dict]:
    """n traces whose message has a role v1 does not know: one identical error per trace."""
    events = []
    for i in range(n):
        bad = simple_trace(f"t{i}")
        bad[1] = {**bad[1], "type": "message", "role": "nobody"}
        events += bad
    return events


def test_line_ranges_and_groups():
    assert line_ranges([9, 3, 4, 5, 5]) == [(3, 5), (9, 9)]
    errors = [
        {"line": n, "trace_id": f"t{n}", "path": "$.role", "message": "bad role"}
        for n in range(3, 201)
    ]
    errors.append({"line": 250, "trace_id": "x", "path": "$.seq", "message": "bad seq"})
    groups = group_errors(errors)
    assert [(g["lines"], g["count"], g["traces"]) for g in groups] == [
        ("lines 3–200", 198, 198),
        ("line 250", 1, 1),
    ]
    spread = [{"line": n, "path": "$", "message": "m"} for n in (2, 4, 6, 8, 10)]
    assert group_errors(spread)[0]["lines"] == "5 lines from 2 to 10"
    assert group_errors(spread[:3])[0]["lines"] == "lines 2, 4, 6"


def test_identical_errors_are_one_row_and_an_all_rejected_upload_failed(client, alice, project):
    up = _ingest(project, jsonl(_all_bad(60)), "bad.jsonl")
    assert up.status == "done" and up.traces_accepted == 0 and up.traces_rejected == 60
    assert up.shown_status == "failed" and up.needs_attention
    client.force_login(alice)
    body = client.get(up.get_absolute_url()).content.decode()
    assert 'id="upload-status">failed<' in body
    assert body.count('class="error-group"') == 1
    assert "Nothing was stored" in body
    group = client.get(up.get_absolute_url()).context["error_groups"][0]
    assert group["count"] == 60 and group["traces"] == 60
    assert group["lines"].startswith("60 lines from 2 to ")  # one bad line per trace: a span
    dash = client.get(reverse("auditor:project", args=[project.pk])).content.decode()
    assert "bad.jsonl</a> failed" in dash and "every trace was rejected" in dash
    assert "done with errors" not in dash


def test_a_mistyped_event_type_names_the_known_one(project):
    assert near_miss_type("tool_cal") == "tool_call"
    assert near_miss_type("Message") == "message"
    assert near_miss_type("guardrail") is None  # a custom type stays valid
    events = simple_trace("a") + simple_trace("b")
    events[-1] = {**events[-1], "type": "tool_cal", "name": "x", "arguments": {}}
    events.append({"trace_id": "a", "type": "guardrail", "payload": {}})
    up = _ingest(project, jsonl(events), "typo.jsonl")
    assert up.traces_accepted == 1 and up.traces_rejected == 1
    (err,) = up.errors
    assert err["path"] == "$.type" and 'did you mean "tool_call"' in err["message"]


def test_a_file_that_is_not_json_is_told_so(client, alice, project):
    up = _ingest(project, b"id,name\n1,alpha\n", "table.csv")
    assert up.status == "failed"
    assert up.failure == "this is not JSON (line 1: id,name)"
    client.force_login(alice)
    assert (
        "this is not JSON (line 1: id,name)" in client.get(up.get_absolute_url()).content.decode()
    )


def test_owners_dismiss_failed_uploads(client, alice, project, django_user_model):
    up = _ingest(project, b"<html>oops</html>\n", "page.html")
    dash_url = reverse("auditor:project", args=[project.pk])
    dismiss = reverse("traces:upload-dismiss", args=[up.pk])
    ann = django_user_model.objects.create_user("ann", password="pw")
    Membership.objects.create(project=project, user=ann, role="annotator")
    client.force_login(ann)
    assert dismiss not in client.get(dash_url).content.decode()
    assert client.post(dismiss).status_code == 403
    client.force_login(alice)
    assert dismiss in client.get(dash_url).content.decode()
    assert client.get(dismiss).status_code == 405
    r = client.post(dismiss)
    assert r.status_code == 302 and r["Location"] == project.get_absolute_url()
    up.refresh_from_db()
    assert up.dismissed and Upload.objects.filter(pk=up.pk).exists()  # a flag, not deleted
    dash = client.get(dash_url).content.decode()
    assert 'id="attention"' not in dash and "page.html" in dash  # still in the uploads list


def test_a_viewer_opening_the_upload_form_gets_a_page(client, alice, project, django_user_model):
    vera = django_user_model.objects.create_user("vera", password="pw")
    Membership.objects.create(project=project, user=vera, role="viewer")
    client.force_login(vera)
    r = client.get(reverse("traces:upload-new", args=[project.pk]))
    body = r.content.decode()
    assert r.status_code == 403
    assert 'id="upload-forbidden"' in body and "You cannot upload to this project" in body
    assert "you are a viewer" in body and "alice" in body  # whom to ask
    assert '<header class="top">' in body  # the site's page, not a bare error
