"""Crashes in the middle of an ingest — the worker's database connection cut, the worker killed
with SIGKILL: the upload ends done with every trace exactly once, and no trace of it is
visible before that."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from tests.builders.v1 import jsonl, simple_trace
from tests.conftest import WorkerProcess, wait_for
from traces import selectors
from traces.models import Event, Trace, Upload
from traces.services import upload_create

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def cut_other_connections() -> int:
    """Terminate every other backend on this database: the worker's connection dies mid-COPY,
    as it would if PostgreSQL restarted under it."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cur.fetchone()[0]


def test_worker_losing_the_database_mid_ingest_leaves_no_half_upload(
    celery_worker_process, project, alice, tmp_path
):
    n_traces = 6000  # 42,000 events in chunks of 2,000: long enough to cut in the middle
    data = jsonl([e for i in range(n_traces) for e in simple_trace(f"t{i:05d}")])
    celery_worker_process.stop()
    env = dict(celery_worker_process.env, TA_INGEST_BATCH_EVENTS="2000")
    worker = WorkerProcess(env, tmp_path / "worker.log")
    worker.start()
    try:
        upload, _ = upload_create(project=project, fileobj=data, filename="big.jsonl", source="api")
        wait_for(lambda: Upload.objects.get(pk=upload.pk).progress > 0.1, timeout=60, interval=0.02)
        assert Upload.objects.get(pk=upload.pk).status == "running"
        assert cut_other_connections() >= 1
        # Until it is done, none of its traces is visible, whatever was written. The count is
        # read before the status: read after, it raced the upload finishing between the two
        # queries (traces visible, the status just read as "running"), which failed CI once.
        deadline = time.monotonic() + 120
        while True:
            visible = selectors.trace_list(user=alice, project=project).count()
            if Upload.objects.get(pk=upload.pk).status in ("done", "failed"):
                break
            assert visible == 0
            assert time.monotonic() < deadline, "the upload never finished"
            time.sleep(0.2)
    finally:
        worker.stop()
        celery_worker_process.start()
    upload.refresh_from_db()
    assert upload.status == "done", (upload.status, upload.failure)
    assert upload.attempts >= 2  # it was interrupted and taken up again
    assert upload.traces_accepted == n_traces
    assert Trace.objects.filter(project=project).count() == n_traces
    assert Event.objects.filter(trace__project=project).count() == 7 * n_traces
    assert selectors.trace_list(user=alice, project=project).count() == n_traces


def test_worker_killed_mid_ingest_loses_and_duplicates_nothing(
    celery_worker_process, project, alice, tmp_path
):
    """SIGKILL in the middle of an ingest: the upload stays invisible, and the next worker's
    sweep takes it over (its heartbeat went stale), deletes the partial rows and finishes it."""
    n_traces = 6000
    data = jsonl([e for i in range(n_traces) for e in simple_trace(f"k{i:05d}")])
    celery_worker_process.stop()
    env = dict(
        celery_worker_process.env,
        TA_INGEST_BATCH_EVENTS="2000",
        TA_STALE_SECONDS="2",
        TA_SWEEP_SECONDS="1",
        TA_VISIBILITY_TIMEOUT="3600",
    )
    victim = WorkerProcess(env, tmp_path / "victim.log")
    victim.start()
    try:
        upload, _ = upload_create(project=project, fileobj=data, filename="big.jsonl", source="api")
        wait_for(lambda: Upload.objects.get(pk=upload.pk).progress > 0.1, timeout=60, interval=0.02)
        victim.kill()
        assert Upload.objects.get(pk=upload.pk).status == "running"
        assert selectors.trace_list(user=alice, project=project).count() == 0
        time.sleep(3)  # the heartbeat goes stale
        successor = WorkerProcess(env, tmp_path / "successor.log")
        successor.start()
        try:
            wait_for(
                lambda: Upload.objects.get(pk=upload.pk).status in ("done", "failed"), timeout=120
            )
        finally:
            successor.stop()
    finally:
        victim.kill()
        celery_worker_process.start()
    upload.refresh_from_db()
    assert upload.status == "done" and upload.attempts == 2
    assert upload.traces_accepted == n_traces
    assert Trace.objects.filter(project=project).count() == n_traces
    assert Event.objects.filter(trace__project=project).count() == 7 * n_traces
