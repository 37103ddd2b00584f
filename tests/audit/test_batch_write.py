"""A batch written on PostgreSQL (auditor.runs.batch_write): its COPY and one statement, with
what the worker's several statements did — items done or failed, the fold, the run's settings
table and progress — and a redelivered copy's rows kept."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from auditor.models import AuditItem, AuditResult, AuditRun, SummaryFold
from auditor.runs.batch_write import store_batch
from auditor.runs.folds import batch_folds
from auditor.runs.record_settings import SETTINGS_REF
from auditor.runs.store import SETTINGS, result_row
from tests.audit.test_runs import SYCON, ingest_file, run_inline

# transactional: the batch's transaction is the outermost one, as on the worker's write lane
pytestmark = pytest.mark.django_db(transaction=True)


def _undone(run: AuditRun, n: int) -> tuple[list[dict], list[int]]:
    """The first ``n`` traces' results taken back out of the database, their items pending
    again and the run's progress and settings table as before they were stored: the rows the
    batch stores again."""
    ids = sorted(run.items.values_list("trace_id", flat=True))[:n]
    stored = list(
        AuditResult.objects.filter(run=run, trace_id__in=ids).order_by("trace_id").values()
    )
    rows = []
    for r in stored:
        row = result_row(run.pk, r["trace_id"], r["policy"], r, [])
        key = r["record"][SETTINGS_REF]
        row["record"] = r["record"]
        row[SETTINGS] = {key: run.record_settings[key]}
        rows.append(row)
    AuditResult.objects.filter(run=run, trace_id__in=ids).delete()
    AuditItem.objects.filter(run=run, trace_id__in=ids).update(status="pending", attempts=0)
    AuditRun.objects.filter(pk=run.pk).update(traces_done=200 - n, record_settings={})
    return rows, ids


def test_a_batch_is_one_copy_and_one_statement(project):
    ingest_file(project, SYCON)
    run = run_inline(project, policies=["commit"], environment="none")
    before = list(AuditResult.objects.filter(run=run).order_by("trace_id").values_list("record"))
    rows, ids = _undone(run, 5)
    done, failed = ids[:4], [(ids[4], "RuntimeError: simulated")]
    rows = [r for r in rows if r["trace_id"] in done]
    folds = batch_folds(rows, dict.fromkeys(done))
    with CaptureQueriesContext(connection) as queries:
        assert store_batch(run.pk, rows, done, failed, folds) == 5
    # the COPY goes through psycopg itself (not captured), the rest is one statement, and no
    # savepoint: BEGIN, COPY, WITH, COMMIT
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["BEGIN", "WITH", "COMMIT"]
    run.refresh_from_db()
    assert run.traces_done == 200 and set(run.record_settings) == {
        r[SETTINGS_REF] for (r,) in before
    }
    assert run.heartbeat_at is not None
    items = {i.trace_id: i for i in AuditItem.objects.filter(run=run, trace_id__in=ids)}
    assert [(items[t].status, items[t].attempts) for t in done] == [("done", 1)] * 4
    assert (items[ids[4]].status, items[ids[4]].error) == ("error", "RuntimeError: simulated")
    fold = SummaryFold.objects.get(run=run)
    assert (fold.first_trace, fold.last_trace, fold.traces) == (ids[0], ids[3], 4)
    stored = AuditResult.objects.filter(run=run, trace_id__in=done).order_by("trace_id")
    assert [r.record for r in stored] == [r["record"] for r in rows]


def test_a_redelivered_copys_rows_are_kept_and_its_batch_folds_nothing(project):
    ingest_file(project, SYCON)
    run = run_inline(project, policies=["commit"], environment="none")
    rows, ids = _undone(run, 3)
    first = [{**r, "record": {**r["record"], "copy": "first"}} for r in rows]
    assert store_batch(run.pk, first, ids, [], batch_folds(first, dict.fromkeys(ids))) == 3
    SummaryFold.objects.filter(run=run).delete()
    # the second copy's COPY conflicts: the batch is written again, the first rows kept, and
    # its items (done by the first copy) move nothing
    second = [{**r, "record": {**r["record"], "copy": "second"}} for r in rows]
    assert store_batch(run.pk, second, ids, [], batch_folds(second, dict.fromkeys(ids))) == 0
    records = AuditResult.objects.filter(run=run, trace_id__in=ids).values_list("record", flat=True)
    assert {r["copy"] for r in records} == {"first"}
    assert not SummaryFold.objects.filter(run=run).exists()
    assert AuditRun.objects.get(pk=run.pk).traces_done == 200
