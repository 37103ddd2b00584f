"""From an upload to its audit, and what the dashboard calls to attention: a finished upload
offers "Audit these N traces" (a run narrowed to it); an upload that rejected traces is "done with
errors", not a green "done"; Needs attention lists every run and upload with something to look
at, not only the latest run."""

from __future__ import annotations

import pytest
from django.urls import reverse

from auditor.models import AuditRun
from tests.builders.v1 import jsonl, simple_trace
from traces.models import Membership, Project, Upload
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db


def _ingest(project, events, name):  # type: ignore[no-untyped-def]
    up, _ = upload_create(
        project=project, fileobj=jsonl(events), filename=name, source="cli", enqueue=False
    )
    return upload_process(upload_id=up.pk)


def three_of_four_rejected(project):  # type: ignore[no-untyped-def]
    events = simple_trace("ok")
    for tid in ("bad1", "bad2", "bad3"):
        bad = simple_trace(tid)
        bad[1] = {**bad[1], "type": "message", "role": "nobody"}  # an invalid role
        events += bad
    return _ingest(project, events, "mixed.jsonl")


def test_three_of_four_rejected_is_done_with_errors(client, alice, project):
    up = three_of_four_rejected(project)
    assert up.status == "done" and up.traces_accepted == 1 and up.traces_rejected == 3
    assert up.shown_status == "done with errors"
    client.force_login(alice)
    body = client.get(up.get_absolute_url()).content.decode()
    assert 'id="upload-status">done with errors<' in body
    assert "3 of 4 traces rejected" in body
    dash = client.get(reverse("auditor:project", args=[project.pk])).content.decode()
    assert "mixed.jsonl</a> done with errors: 3 of 4 traces rejected" in dash
    assert "status-done-with-errors" in dash


def test_a_clean_upload_is_done_and_offers_its_audit(client, alice, project):
    up = _ingest(project, simple_trace("a") + simple_trace("b"), "clean.jsonl")
    _ingest(project, simple_trace("other"), "other.jsonl")
    assert up.shown_status == "done"
    client.force_login(alice)
    body = client.get(up.get_absolute_url()).content.decode()
    audit_url = reverse("auditor:run-new", args=[project.pk]) + f"?upload={up.pk}"
    assert f'href="{audit_url}">Audit these 2 traces</a>' in body
    form = client.get(audit_url).content.decode()
    assert "Audit the 2 traces of upload" in form and f'name="upload" value="{up.pk}"' in form
    r = client.post(
        reverse("auditor:run-new", args=[project.pk]),
        {"upload": up.pk, "policies": ["checklist"], "environment": "none"},
    )
    run = AuditRun.objects.get()
    assert r.status_code == 302 and run.trace_filter == {"upload": up.pk}
    from auditor.runs.services import run_traces

    assert sorted(run_traces(run).values_list("external_id", flat=True)) == ["a", "b"]


def test_audit_of_another_projects_upload_is_404(client, alice, project, charlie):
    beta = Project.objects.create(name="beta")
    Membership.objects.create(project=beta, user=charlie, role="owner")
    theirs = _ingest(beta, simple_trace("x"), "x.jsonl")
    client.force_login(alice)
    url = reverse("auditor:run-new", args=[project.pk])
    assert client.get(f"{url}?upload={theirs.pk}").status_code == 404
    assert client.get(f"{url}?upload=nope").status_code == 404
    assert client.post(url, {"upload": theirs.pk}).status_code == 404
    assert not AuditRun.objects.exists()


def test_a_viewer_is_not_offered_an_audit(client, project, django_user_model):
    vera = django_user_model.objects.create_user("vera", password="pw")
    Membership.objects.create(project=project, user=vera, role="viewer")
    up = _ingest(project, simple_trace("a"), "a.jsonl")
    client.force_login(vera)
    assert "Audit these" not in client.get(up.get_absolute_url()).content.decode()


def test_attention_covers_every_run_not_only_the_latest(client, alice, project):
    def run(label, **kw):  # type: ignore[no-untyped-def]
        return AuditRun.objects.create(
            project=project, label=label, policies=["checklist"], traces_total=1, **kw
        )

    older = run(
        "older",
        status=AuditRun.Status.DONE,
        summary={"checklist": {"overall": {"transitions": {"unknown": 3}}}},
    )
    failed = run("broken", status=AuditRun.Status.FAILED, failure="worker lost")
    latest = run(
        "latest",
        status=AuditRun.Status.DONE,
        summary={"checklist": {"overall": {"transitions": {"unknown": 1}}}},
    )
    Upload.objects.create(
        project=project, filename="dead.jsonl", size=1, content_hash="d", source="cli",
        status=Upload.Status.FAILED, failure="not JSON",
    )  # fmt: skip
    client.force_login(alice)
    body = client.get(reverse("auditor:project", args=[project.pk])).content.decode()
    assert f"in run #{older.pk}" in body and f"in run #{latest.pk}" in body
    assert f"Run #{failed.pk}</a> failed" in body and "worker lost" in body
    assert "dead.jsonl</a> failed" in body


def test_compare_picker_offers_one_projects_runs(client, alice, project, charlie):
    beta = Project.objects.create(name="beta")
    Membership.objects.create(project=beta, user=alice, role="viewer")
    mine = AuditRun.objects.create(project=project, policies=["checklist"], status="done")
    theirs = AuditRun.objects.create(project=beta, policies=["checklist"], status="done")
    client.force_login(alice)
    url = reverse("auditor:run-compare")
    newest = client.get(url).context["choices"]
    assert [r.pk for r in newest] == [theirs.pk]  # the newest run's project only
    assert [r.pk for r in client.get(url, {"project": project.pk}).context["choices"]] == [mine.pk]
    assert [r.pk for r in client.get(url, {"a": mine.pk}).context["choices"]] == [mine.pk]
