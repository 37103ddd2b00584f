"""Real Chromium: deleting an upload whose traces have audit results and annotations. The
confirmation counts what goes (traces, audit results, annotation questions, annotations); after
the delete they are gone, and the other run's traces, results and annotations are untouched."""

from __future__ import annotations

import pytest

from auditor.annotation.models import AnnotationItem, AnnotationQueue, Verdict
from auditor.models import AuditResult
from auditor.runs.services import audit_run_create, audit_run_start
from tests.annotate.conftest import ingest_bytes
from tests.audit.sycon_runs import DATA, SETTINGS, needs_sycon
from tests.browsing import login, shot, watch
from traces.models import Trace, Upload

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_sycon,
]

LINES = 12


def _annotate(queue, results, users) -> None:  # type: ignore[no-untyped-def]
    for r in results:
        item = AnnotationItem.objects.create(queue=queue, result=r, kind="outcome")
        for u in users:
            Verdict.objects.create(item=item, annotator=u, label="success")


def test_delete_names_the_annotations_and_leaves_the_other_run_whole(
    page, live_server, project, alice, django_user_model, tmp_path
):
    bob = django_user_model.objects.create_user("bob", password="bob-pw")
    uploads = []
    for model in ("claude", "gpt-4o"):
        raw = (DATA / f"false_presuppositions_{model}_prompt0.jsonl").read_bytes()
        data = b"\n".join(raw.splitlines()[:LINES]) + b"\n"
        uploads.append(ingest_bytes(project, data, f"{model}.jsonl"))
    a, b = uploads
    run = audit_run_create(
        project=project, policies=["commit"], settings=SETTINGS, enqueue=False, environment="none"
    )
    audit_run_start(run_id=run.pk, inline=True)
    queue = AnnotationQueue.objects.create(run=run, name="check", kinds=["outcome"])
    results_a = list(AuditResult.objects.filter(run=run, trace__upload=a).order_by("pk")[:3])
    results_b = list(AuditResult.objects.filter(run=run, trace__upload=b).order_by("pk")[:2])
    _annotate(queue, results_a, [alice, bob])  # 3 questions, 6 annotations
    _annotate(queue, results_b, [alice])  # 2 questions, 2 annotations
    assert AuditResult.objects.filter(run=run, trace__upload=a).count() == LINES

    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(f"{live_server.url}/uploads/{a.pk}/")
    page.click("#delete-upload")
    goes = [li.inner_text() for li in page.locator("#delete-goes li").all()]
    shot(page, tmp_path, "upload-delete-annotated.png")
    assert f"{LINES} traces" in goes
    assert f"{LINES} audit results" in goes
    assert "3 annotation questions" in goes
    assert "6 annotations (verdicts)" in goes
    page.click("#delete-submit")
    page.wait_for_url(lambda url: "/delete" not in url)

    assert not Upload.objects.filter(pk=a.pk).exists()
    assert not Trace.objects.filter(upload_id=a.pk).exists()
    assert not AuditResult.objects.filter(pk__in=[r.pk for r in results_a]).exists()
    assert not AnnotationItem.objects.filter(result_id__in=[r.pk for r in results_a]).exists()
    assert Verdict.objects.filter(item__queue=queue).count() == 2
    # the other run: its traces, results and annotations as they were
    assert Trace.objects.filter(upload=b).count() == LINES
    assert AuditResult.objects.filter(run=run, trace__upload=b).count() == LINES
    assert set(AnnotationItem.objects.filter(queue=queue).values_list("result_id", flat=True)) == {
        r.pk for r in results_b
    }
    page.goto(f"{live_server.url}/uploads/{b.pk}/")
    assert page.locator("#run-sources").count() == 1
    assert errors == [], errors
