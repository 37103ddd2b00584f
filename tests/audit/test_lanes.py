"""A chunk's batches read and stored on threads beside the auditing (auditor.runs.lanes): the
same results as one thread doing all, a failed write raised with its batch left pending, and the
work kept in the caller's thread inside a transaction the threads' connections could not see."""

from __future__ import annotations

import threading

import pytest

from auditor.models import AuditItem, AuditResult, AuditRun
from auditor.runs import work
from auditor.runs.models import DECISION_FIELDS
from auditor.runs.services import audit_run_create, audit_run_start
from tests.audit.test_runs import LDB, SYCON, ingest_file
from tests.real_data import need_full

COLUMNS = ("trace_id", "policy", "guarded_trajectory", "guarded_from", *DECISION_FIELDS)


def store_threads(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The names of the threads each batch was stored on, in order."""
    names: list[str] = []
    store = work._store_batch

    def recording(run_id, batch):  # type: ignore[no-untyped-def]
        names.append(threading.current_thread().name)
        return store(run_id, batch)

    monkeypatch.setattr(work, "_store_batch", recording)
    return names


def audited(project, progress=None) -> AuditRun:  # type: ignore[no-untyped-def]
    run = audit_run_create(project=project, enqueue=False, environment="none")
    audit_run_start(run_id=run.pk, inline=True, progress=progress)
    run.refresh_from_db()
    return run


def stored(run: AuditRun) -> dict[tuple[int, str], dict]:
    rows = AuditResult.objects.filter(run=run).values(*COLUMNS)
    return {(r["trace_id"], r["policy"]): r for r in rows}


@pytest.mark.django_db(transaction=True)
def test_overlapped_batches_store_what_one_thread_stores(postgres, project, settings, monkeypatch):  # type: ignore[no-untyped-def]
    need_full()  # batches and threads counted for the full files' traces
    ingest_file(project, SYCON)  # 200 traces: four batches, so reads and writes overlap
    ingest_file(project, LDB)
    threads = store_threads(monkeypatch)
    calls: list[tuple[int, int]] = []
    run = audited(project, progress=lambda done, total: calls.append((done, total)))
    assert run.status == "done" and run.error_count == 0 and run.traces_done == 364
    assert len(threads) == 8 and all(t.startswith("ta-write") for t in threads), threads
    # the bar moves once per stored batch, up to every trace
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and calls[-1] == (364, 364)

    settings.TA_AUDIT_OVERLAP = False
    threads.clear()
    alone = audited(project)
    assert threads == ["MainThread"] * 8
    assert stored(run) == stored(alone) and len(stored(run)) == 364 * 4
    assert all(isinstance(r["record"]["settings"], dict) for r in stored(run).values())

    # the VRR calibration read its parts (164 LDB loops: two) ahead on the read lane, and
    # estimated what the one thread did
    def calibrations(r: AuditRun) -> list:
        return sorted(r.calibrations.values_list("model", "verifier", "traces", "params"))

    assert calibrations(run) == calibrations(alone) and calibrations(run)[0][2] == 164


@pytest.mark.django_db(transaction=True)
def test_a_failed_write_is_raised_and_its_batch_stays_pending(project, monkeypatch):
    need_full()  # a second batch needs more SYCON traces than the sample holds
    ingest_file(project, SYCON)
    writes = 0
    store = work.store_results

    def second_fails(*args):  # type: ignore[no-untyped-def]
        nonlocal writes
        writes += 1
        if writes == 2:
            raise RuntimeError("the database went away")
        return store(*args)

    monkeypatch.setattr(work, "store_results", second_fails)
    run = audit_run_create(project=project, enqueue=False, environment="none")
    with pytest.raises(RuntimeError, match="went away"):
        audit_run_start(run_id=run.pk, inline=True)
    # the first batch is stored whole; the failed one and those after it wait for a retry
    items = AuditItem.objects.filter(run=run)
    done = set(items.filter(status="done").values_list("trace_id", flat=True))
    assert len(done) == work.BATCH_TRACES
    assert items.filter(status="pending").count() == 200 - work.BATCH_TRACES
    assert set(AuditResult.objects.filter(run=run).values_list("trace_id", flat=True)) == done
    run.refresh_from_db()
    assert run.status == "running" and run.traces_done == work.BATCH_TRACES


@pytest.mark.django_db
def test_inside_a_transaction_the_batches_stay_in_this_thread(project, monkeypatch):
    """A test's transaction (or a caller's atomic block) holds rows no other connection sees."""
    need_full()  # four batches of the full file's 200 traces
    ingest_file(project, SYCON)
    threads = store_threads(monkeypatch)
    run = audited(project)
    assert run.status == "done" and run.traces_done == 200
    assert threads == ["MainThread"] * 4


@pytest.mark.django_db
def test_a_runs_chunks_share_its_auditors(project, django_assert_num_queries):
    """Calibration and auditors are built once per run and process, not per chunk."""
    ingest_file(project, LDB)
    run = audit_run_create(project=project, enqueue=False, environment="none")
    audit_run_start(run_id=run.pk, inline=True)  # calibrates VRR, audits
    # the run as a chunk's task reads it (calibrated: a chunk's auditors from before the
    # calibration was stored are not kept for the chunks after it)
    first = work.AuditorCache.for_run(AuditRun.objects.get(pk=run.pk))
    assert first.cals  # the run's calibration is in it
    again = AuditRun.objects.get(pk=run.pk)  # as the next chunk's task reads it
    with django_assert_num_queries(0):
        assert work.AuditorCache.for_run(again) is first
    other = audit_run_create(project=project, enqueue=False, environment="none")
    assert work.AuditorCache.for_run(other) is not first


@pytest.mark.django_db(transaction=True)
def test_an_inline_audit_goes_chunk_by_chunk_with_one_bar(project, monkeypatch):
    """The CLI's inline audit holds one chunk's traces at a time; its bar counts the run's."""
    from auditor.runs import services

    need_full()  # chunks of 60 of the full file's 200 traces
    ingest_file(project, SYCON)
    monkeypatch.setattr(services, "INLINE_CHUNK_TRACES", 60)
    sizes: list[int] = []
    process = services.audit_chunk_process

    def recording(*, run_id, trace_ids, progress):  # type: ignore[no-untyped-def]
        sizes.append(len(trace_ids))
        return process(run_id=run_id, trace_ids=trace_ids, progress=progress)

    monkeypatch.setattr(services, "audit_chunk_process", recording)
    calls: list[tuple[int, int]] = []
    run = audited(project, progress=lambda done, total: calls.append((done, total)))
    assert run.status == "done" and run.traces_done == 200 and run.error_count == 0
    assert sizes == [60, 60, 60, 20]
    assert {t for _, t in calls} == {200} and calls[-1] == (200, 200)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


@pytest.mark.django_db
def test_a_run_start_analyzes_tables_postgresql_never_analyzed(postgres, project):  # type: ignore[no-untyped-def]
    """A new database's first audit: without statistics the planner scans every event for each
    batch's few traces; the start gathers them once, and only when none were ever gathered."""
    from django.db import connection

    from traces.selectors import analyze_if_never_analyzed

    def never_analyzed() -> set[str]:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_stat_clear_snapshot()")
            cur.execute(
                "SELECT relname FROM pg_stat_user_tables WHERE relname IN "
                "('traces_event', 'traces_trace') AND last_analyze IS NULL "
                "AND last_autoanalyze IS NULL"
            )
            return {name for (name,) in cur.fetchall()}

    ingest_file(project, SYCON)
    with connection.cursor() as cur:
        for table in ("traces_event", "traces_trace"):
            cur.execute("SELECT pg_stat_reset_single_table_counters(%s::regclass)", [table])
    assert never_analyzed() == {"traces_event", "traces_trace"}
    run = audited(project)
    assert run.status == "done" and never_analyzed() == set()
    assert analyze_if_never_analyzed() is False  # once gathered, autovacuum's to keep
