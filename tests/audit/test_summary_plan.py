"""A run's summary reads its results a page at a time in trace order; right after a large run
is written the planner's statistics know nothing of it, and it read every page by scanning and
sorting all of a policy's results, many times slower at 10⁵ traces. The summary
gathers the key columns' statistics first when the plan misjudges the run."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from auditor.models import AuditResult, AuditRun
from auditor.runs.summary import TRUSTED_ROWS, analyze_results_if_misjudged
from traces.models import Trace, Upload

pytestmark = pytest.mark.django_db

POLICIES = ["twincheck", "checklist", "vrr", "commit"]


def _estimate(run: AuditRun) -> float:
    """The planner's estimate of the run's results."""
    with connection.cursor() as cur:
        cur.execute(
            "EXPLAIN (FORMAT JSON) SELECT 1 FROM auditor_auditresult WHERE run_id = %s", [run.pk]
        )
        plan = cur.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return plan[0]["Plan"]["Plan Rows"]


def _page_plan(run: AuditRun) -> str:
    with connection.cursor() as cur:
        cur.execute(
            "EXPLAIN SELECT trace_id, record::text FROM auditor_auditresult "
            "WHERE run_id = %s AND policy = 'checklist' AND trace_id > 0 ORDER BY trace_id "
            "LIMIT 500",
            [run.pk],
        )
        return "\n".join(r[0] for r in cur.fetchall())


def test_a_large_run_unknown_to_the_statistics_is_analyzed_once(project):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's planner")
    n = TRUSTED_ROWS // len(POLICIES) + 500
    up = Upload.objects.create(
        project=project, filename="p.jsonl", size=1, content_hash="p", source="cli",
        status=Upload.Status.DONE,
    )  # fmt: skip
    Trace.objects.bulk_create(
        [Trace(project=project, upload=up, external_id=f"p{i}") for i in range(n)]
    )
    run = AuditRun.objects.create(
        project=project, policies=POLICIES, status=AuditRun.Status.DONE, traces_total=n
    )
    with connection.cursor() as cur:
        cur.execute("ANALYZE auditor_auditresult")  # statistics from before the run's results
        cur.execute(
            "INSERT INTO auditor_auditresult (run_id, trace_id, policy, applied, transition, "
            "continuation, record, created_at) SELECT %s, t.id, p, false, 'not_applicable', "
            "'exact', '{}'::jsonb, now() FROM traces_trace t CROSS JOIN unnest(%s::text[]) p "
            "WHERE t.upload_id = %s",
            [run.pk, POLICIES, up.pk],
        )
    assert AuditResult.objects.filter(run=run).count() == n * len(POLICIES)
    rows = n * len(POLICIES)
    assert _estimate(run) < rows / 10  # the statistics know nothing of the run
    assert analyze_results_if_misjudged(run)
    assert _estimate(run) > rows / 2
    assert "Sort" not in _page_plan(run)  # a page: 500 results read in trace order
    assert not analyze_results_if_misjudged(run)  # once: the plan now knows the run
    small = AuditRun.objects.create(project=project, policies=POLICIES, traces_total=10)
    assert not analyze_results_if_misjudged(small)  # a small run's pages are cheap either way
