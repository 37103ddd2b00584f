"""Redis drops while a worker has a task in flight, then comes back: the same worker process
reconnects, the interrupted upload and the work queued after the outage finish, and nobody has to
restart the worker. The Redis server is the test's own, so other tests'
broker is untouched."""

from __future__ import annotations

import shutil
import time

import pytest

from tests.builders.v1 import jsonl, simple_trace
from tests.conftest import WorkerProcess, unavailable, wait_for
from tests.ingest.test_broker_down import RedisServer, free_port, point_app_at
from traces.models import Trace, Upload
from traces.services import upload_create

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_worker_survives_redis_dropping_mid_task(celery_worker_process, project, tmp_path):
    if not shutil.which("redis-server"):
        unavailable("redis-server is not installed")
    from auditor.celery import app as celery_app

    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    redis = RedisServer(port, tmp_path)
    redis.start()
    old_url = celery_app.conf.broker_url
    point_app_at(url)
    env = dict(
        celery_worker_process.env,
        CELERY_BROKER_URL=url,
        TA_INGEST_BATCH_EVENTS="2000",
        TA_STALE_SECONDS="3",
        TA_SWEEP_SECONDS="1",
    )
    # As docker/entrypoint.sh runs it: gossip, mingle and heartbeats on.
    worker = WorkerProcess(
        env, tmp_path / "worker.log", options=["-l", "info", "--concurrency", "2"]
    )
    worker.start()
    try:
        n_traces = 6000  # long enough to drop Redis in the middle
        data = jsonl([e for i in range(n_traces) for e in simple_trace(f"b{i:05d}")])
        upload, _ = upload_create(project=project, fileobj=data, filename="big.jsonl", source="api")
        wait_for(
            lambda: Upload.objects.get(pk=upload.pk).progress > 0.05, timeout=60, interval=0.02
        )
        redis.proc.kill()  # the broker vanishes with the task unacknowledged
        redis.proc.wait(timeout=10)
        # Work accepted during the outage stays pending (publishing gives up quickly).
        later, _ = upload_create(
            project=project,
            fileobj=jsonl(simple_trace("after")),
            filename="after.jsonl",
            source="api",
        )
        # Keep it down until the task in flight has finished: its acknowledgement then meets a
        # dead connection (the path that killed the worker for good).
        wait_for(lambda: Upload.objects.get(pk=upload.pk).status == "done", timeout=120)
        time.sleep(2)
        redis.start()
        wait_for(
            lambda: Upload.objects.filter(pk__in=[upload.pk, later.pk], status="done").count() == 2,
            timeout=60,
            interval=0.2,
        )
        assert worker.proc is not None and worker.proc.poll() is None, (
            "the worker exited: " + worker.log.read_text()[-3000:]
        )
        # And it still takes new work from the restored broker.
        third, _ = upload_create(
            project=project,
            fileobj=jsonl(simple_trace("third")),
            filename="third.jsonl",
            source="api",
        )
        wait_for(lambda: Upload.objects.get(pk=third.pk).status == "done", timeout=60)
        log = worker.log.read_text()
        assert "Unrecoverable error" not in log, log[-3000:]
    finally:
        worker.stop()
        redis.stop()
        point_app_at(old_url)
    assert Trace.objects.filter(project=project).count() == n_traces + 2
