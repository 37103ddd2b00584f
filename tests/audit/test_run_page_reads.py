"""The run page reads stored aggregates: the transition matrix is counted once per
version of the run (or read from the summary), counted again once the results change, and the
summary reaches the page without its annotation queues — on the real database (PostgreSQL: the
reads are SQL on jsonb and the row's version)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from auditor.models import AuditItem, AuditResult, AuditRun
from auditor.runs.stats_display import policy_statistics
from auditor.runs.summary import audit_run_summary
from policies.stats.report import MATRIX_KEY
from traces.models import Trace, Upload

pytestmark = pytest.mark.django_db

# (actor, guarded, transition) of six traces: one rescue, one harm, two same, one unknown, one
# not applicable (no pair: counted apart)
ROWS = [
    (False, True, "rescue"),
    (True, False, "harm"),
    (True, True, "same"),
    (False, False, "same"),
    (True, None, "unknown"),
    (None, None, "not_applicable"),
]


@pytest.fixture
def run(project):  # type: ignore[no-untyped-def]
    if connection.vendor != "postgresql":
        pytest.skip("the run page's stored reads are PostgreSQL's (SQLite reads it all)")
    up = Upload.objects.create(
        project=project, filename="r.jsonl", size=1, content_hash="r", source="cli",
        status=Upload.Status.DONE,
    )  # fmt: skip
    run = AuditRun.objects.create(
        project=project, policies=["checklist"], status=AuditRun.Status.DONE,
        traces_total=len(ROWS), traces_done=len(ROWS),
    )  # fmt: skip
    for i, (a, g, tr) in enumerate(ROWS):
        t = Trace.objects.create(project=project, upload=up, external_id=f"r{i}", category="c")
        AuditItem.objects.create(run=run, trace=t, status=AuditItem.Status.DONE)
        AuditResult.objects.create(
            run=run, trace=t, policy="checklist", applied=tr != "not_applicable",
            actor_success=a, guarded_success=g, transition=tr,
            continuation="exact" if tr in ("same", "not_applicable") else "replaced",
            record={"not_applicable": "no claims"} if tr == "not_applicable" else {},
        )  # fmt: skip
    run.summary = audit_run_summary(run)
    run.save(update_fields=["summary"])
    return run


def _grid(client, run) -> tuple[list[list[int]], list[str]]:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        r = client.get(run.get_absolute_url())
    assert r.status_code == 200
    grid = [[c["n"] for c in row] for row in r.context["tables"][0]["matrix"]]
    return grid, [q["sql"] for q in ctx.captured_queries]


def test_the_summary_keeps_the_matrix_and_the_page_reads_it_there(client, alice, run):
    client.force_login(alice)
    assert sorted(run.summary["checklist"][MATRIX_KEY], key=str) == sorted(
        [[False, True, 1], [True, False, 1], [True, True, 1], [False, False, 1], [True, None, 1]],
        key=str,
    )  # the not-applicable result is no pair
    grid, sql = _grid(client, run)
    assert grid == [[1, 1, 1], [1, 1, 0], [0, 0, 0]]
    assert not any("auditor_auditresult" in q for q in sql)  # not even on the first view


def test_a_summary_written_without_the_matrix_gets_it_by_migration(client, alice, run):
    """Summaries written before they kept the matrix get its cells counted from the results
    (migration 0020): the page then reads them from the summary as from any other."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("auditor.migrations.0022_summary_matrix")
    client.force_login(alice)
    summary = {p: {k: v for k, v in s.items() if k != MATRIX_KEY} for p, s in run.summary.items()}
    AuditRun.objects.filter(pk=run.pk).update(summary=summary)
    migration.add_matrix(apps, None)
    run.refresh_from_db()
    assert sorted(run.summary["checklist"][MATRIX_KEY], key=str) == sorted(
        [[False, True, 1], [True, False, 1], [True, True, 1], [False, False, 1], [True, None, 1]],
        key=str,
    )
    grid, sql = _grid(client, run)
    assert grid == [[1, 1, 1], [1, 1, 0], [0, 0, 0]]
    assert not any("auditor_auditresult" in q for q in sql)


def test_counts_kept_in_the_summary_are_read_from_it(client, alice, run):
    client.force_login(alice)
    summary = dict(run.summary)
    summary["checklist"] = {**summary["checklist"], MATRIX_KEY: [[True, True, 7]]}
    AuditRun.objects.filter(pk=run.pk).update(summary=summary)
    grid, sql = _grid(client, run)
    assert grid == [[7, 0, 0], [0, 0, 0], [0, 0, 0]]
    assert not any("auditor_auditresult" in q for q in sql)


def test_a_change_to_the_results_is_counted_once_the_summary_is_written(client, alice, run):
    client.force_login(alice)
    _grid(client, run)
    # an annotation settles the unknown guarded outcome: the results change and, as every
    # path that changes results does (auditor.annotation.flowback), the summary is written
    AuditResult.objects.filter(run=run, transition="unknown").update(
        guarded_success=True, transition="same"
    )
    AuditRun.objects.filter(pk=run.pk).update(summary=audit_run_summary(run))
    grid, _ = _grid(client, run)
    assert grid == [[2, 1, 0], [1, 1, 0], [0, 0, 0]]


def test_the_summary_counts_its_annotation_queue(run):
    """The stored summary counts the unknown results (its readers only count them), instead of
    listing them: 61,000 items, 8 MB of a 10⁵-trace run's summary."""
    checklist = run.summary["checklist"]
    assert "annotation_queue" not in checklist
    unknown = AuditResult.objects.filter(run=run, policy="checklist", transition="unknown")
    assert checklist["annotation_queue_n"] == unknown.count() >= 1
    assert policy_statistics(checklist)["annotation_queue"] == unknown.count()


def test_the_page_gets_the_summary_without_its_annotation_queue(client, alice, run):
    """A run summarised before the count holds the queue's items: the page reads without."""
    client.force_login(alice)
    items = [{"trace": 1, "reason": "no re-check", "needs": "guarded outcome"}]
    old = {p: {**s, "annotation_queue": items} for p, s in run.summary.items()}
    AuditRun.objects.filter(pk=run.pk).update(summary=old)
    r = client.get(run.get_absolute_url())
    shown = r.context["run"].summary["checklist"]
    assert "annotation_queue" not in shown
    assert shown["overall"] == run.summary["checklist"]["overall"]
    assert policy_statistics(old["checklist"])["annotation_queue"] == 1  # old ones still count
    run.refresh_from_db()
    assert run.summary["checklist"]["annotation_queue"] == items  # stored as it was


def test_the_traces_list_reads_no_run_summary(client, alice, run):
    """A 100k-trace run's summary is 8 MB: the list (which shows none of it) once read two."""
    client.force_login(alice)
    with CaptureQueriesContext(connection) as ctx:
        r = client.get(reverse("auditor:trace-list", args=[run.project_id]))
    assert r.status_code == 200 and r.context["run"].pk == run.pk
    assert len(r.context["rows"]) == len(ROWS)
    assert not any('"auditor_auditrun"."summary"' in q["sql"] for q in ctx.captured_queries)
