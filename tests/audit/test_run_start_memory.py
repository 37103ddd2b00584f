"""A run's start holds memory by the part, not by the run: its trace ids go to
PostgreSQL as array parameters of `services.ID_PART`, never as an IN list of one placeholder per
id, and its items are made a part at a time."""

from __future__ import annotations

import tracemalloc

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from auditor.models import AuditItem, Calibration
from auditor.runs import services
from auditor.runs.calibration import run_calibrate
from auditor.runs.services import audit_run_create
from tests.audit.test_runs import LDB, SYCON, ingest_file, run_inline
from traces.models import Trace

pytestmark = pytest.mark.django_db


def test_calibration_over_many_trace_ids_holds_no_list_of_them(project, postgres):  # type: ignore[no-untyped-def]
    """100,000 trace ids (the run's few real ones among ids of no trace) go to PostgreSQL as
    array parameters (other databases take the ORM's IN list): the whole calibration stays
    under 8 MB of Python allocations, far below what an IN list of them holds, and calibrates
    the same."""
    ingest_file(project, LDB)
    real = list(Trace.objects.filter(project=project).order_by("pk").values_list("pk", flat=True))
    ids = real + list(range(10**9, 10**9 + 100_000 - len(real)))
    want = audit_run_create(project=project, policies=["vrr"], enqueue=False)
    run_calibrate(want, real)
    run = audit_run_create(project=project, policies=["vrr"], enqueue=False)
    tracemalloc.start()
    run_calibrate(run, ids)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    assert peak < 8, peak
    got = {(c.model, c.verifier): c.params for c in Calibration.objects.filter(run=run)}
    assert got and got == {(c.model, c.verifier): c.params for c in want.calibrations.all()}


def test_items_made_and_ids_read_a_part_at_a_time(project, monkeypatch):
    """With parts of 7 ids: one INSERT per part, every trace's item made once, and the run
    audited whole (the ids read 7 at a time)."""
    ingest_file(project, SYCON)
    monkeypatch.setattr(services, "ID_PART", 7)
    ids = list(Trace.objects.filter(project=project).order_by("pk").values_list("pk", flat=True))
    run = audit_run_create(project=project, policies=["checklist"], enqueue=False)
    with CaptureQueriesContext(connection) as queries:
        services._create_items(run, ids)
    inserts = [q for q in queries if q["sql"].startswith("INSERT")]
    assert len(inserts) == -(-len(ids) // 7) > 1
    assert sorted(AuditItem.objects.filter(run=run).values_list("trace_id", flat=True)) == ids
    done = run_inline(project, policies=["checklist"], environment="none")
    assert done.traces_total == done.traces_done == len(ids) and done.status == "done"
