"""Results written by COPY (auditor.runs.store) are the policies' own results, value for
value, and a batch written twice (a redelivered chunk) keeps one copy."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.db import transaction

from auditor.models import AuditResult, AuditRun
from auditor.runs.calibration import label_events
from auditor.runs.models import DECISION_FIELDS
from auditor.runs.store import result_row, store_results
from auditor.runs.summary import audit_run_summary
from auditor.runs.work import AuditorCache
from policies.report import summarise_run
from policies.twincheck_report import twincheck_report
from tests.audit.test_runs import DATA, LDB, SYCON, ingest_file, run_inline
from traces.models import Trace
from traces.selectors import load_events

pytestmark = pytest.mark.django_db

TAU = DATA / "tau-bench" / "gpt-4o-airline.json"


def expected_results(run: AuditRun) -> dict[tuple[int, str], dict]:
    """Each trace audited again in this process with the run's own auditors, as the stored
    row's fields would hold them (stdlib JSON round trip: tuples become lists)."""
    auditors = AuditorCache(run)
    traces = list(Trace.objects.filter(audit_items__run=run))
    events = load_events([t.pk for t in traces])
    out = {}
    for trace in traces:
        evs = label_events(events[trace.pk], auditors.executed)
        auditor = auditors.for_trace(trace.header or {}, trace.model, evs)
        for name, res in auditor.audit(evs).items():
            row = result_row(run.pk, trace.pk, name, res.to_dict())
            out[(trace.pk, name)] = json.loads(json.dumps(row))
    return out


@pytest.mark.parametrize("path", [SYCON, LDB, TAU], ids=["sycon", "ldb", "tau"])
def test_stored_results_equal_the_policies_results(project, path):
    ingest_file(project, path)
    run = run_inline(project, environment="none")
    assert run.status == "done" and run.error_count == 0
    stored = {
        (r["trace_id"], r["policy"]): r
        for r in AuditResult.objects.filter(run=run).values(
            "run_id", "trace_id", "policy", "guarded_trajectory", *DECISION_FIELDS
        )
    }
    expected = expected_results(run)
    assert len(stored) == len(expected) == run.traces_total * len(run.policies)
    assert stored == expected
    # The comparison covers the jsonb columns with content, not only empty ones.
    # (LDB's loops are replayed without a changed trajectory; the other two change some.)
    assert any(r["guarded_trajectory"] is not None for r in stored.values()) or path == LDB
    assert all(r["record"] for r in stored.values())


def test_a_batch_stored_twice_keeps_the_first_copy(project):
    ingest_file(project, SYCON)
    run = run_inline(project, policies=["checklist"], environment="none")
    first = list(AuditResult.objects.filter(run=run).order_by("pk").values())
    rows = [
        {**result_row(run.pk, r["trace_id"], "checklist", r), "record": {"redelivered": True}}
        for r in first
    ]
    with transaction.atomic():  # as in the worker: the batch's transaction
        store_results(rows)  # every row conflicts: the COPY fails, the fallback keeps them
        store_results([])
    assert list(AuditResult.objects.filter(run=run).order_by("pk").values()) == first


def test_run_summary_reads_the_records_as_the_jsonfield_does(project):
    """The summary decodes records from text with orjson (for speed): the tables equal those
    from the JSONField's own decoding, on real data with TwinCheck's report."""
    ingest_file(project, TAU)
    run = run_inline(project, environment="none")
    assert run.summary["twincheck"]["report"]
    categories = dict(Trace.objects.filter(audit_items__run=run).values_list("pk", "category"))
    for policy in run.policies:
        rows = list(
            AuditResult.objects.filter(run=run, policy=policy)
            .order_by("trace_id")
            .values("trace_id", *DECISION_FIELDS)
        )
        results = [{**r, "policy": policy, "guarded_trajectory": None} for r in rows]
        cats = [categories.get(r["trace_id"]) or "—" for r in rows]
        n_boot = settings.TA_SUMMARY_BOOTSTRAP
        expected = summarise_run(results, cats, n_boot=n_boot)
        if policy == "twincheck":
            expected["report"] = twincheck_report(results, cats, n_boot=n_boot)
        assert audit_run_summary(run)[policy] == json.loads(json.dumps(expected))
