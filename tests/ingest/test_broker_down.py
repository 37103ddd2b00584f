"""With Redis down, uploads are still accepted (202, kept, pending); when Redis returns, the
workers' sweep queues them and they are processed. A Redis server of the test's own is
stopped and started, so other tests' broker is untouched."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest
from rest_framework.test import APIClient

from auditor.celery import app as celery_app
from tests.builders.v1 import jsonl, simple_trace
from tests.conftest import WorkerProcess, unavailable, wait_for
from traces.models import Upload

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, port: int, workdir) -> None:  # type: ignore[no-untyped-def]
        self.port, self.workdir, self.proc = port, workdir, None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: self._answers(), timeout=20)

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)


def point_app_at(url: str) -> None:
    """Make this process's Celery app publish to `url`: forget its connection pool and the
    producer pool built on it, so both are looked up again for the new URL. The pools are
    kombu's, shared per URL, so they are only forgotten here, never closed: closing the
    original URL's pool would break every later test that queues work."""
    # Celery fills broker_write_url/read_url from broker_url at configuration: set all three.
    celery_app.conf.broker_url = celery_app.conf.broker_write_url = url
    celery_app.conf.broker_read_url = url
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


def test_uploads_accepted_while_redis_is_down_are_processed_when_it_returns(
    celery_worker_process, project, token, tmp_path, settings
):
    if not shutil.which("redis-server"):
        unavailable("redis-server is not installed")
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    redis = RedisServer(port, tmp_path)
    # Publish to our own broker from here on (the app reads broker_url when it connects).
    old_url = celery_app.conf.broker_url
    point_app_at(url)
    try:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        started = time.monotonic()
        r = client.post(
            "/api/uploads/",
            data=jsonl(simple_trace("while-down")),
            content_type="application/x-ndjson",
        )
        assert r.status_code == 202, r.content  # accepted, not a 500
        assert time.monotonic() - started < 10, "the request hung on the dead broker"
        upload = Upload.objects.get(pk=r.json()["id"])
        assert upload.status == "pending" and upload.file.size > 0

        redis.start()  # Redis is back; a worker on it sweeps for pending uploads
        env = dict(
            celery_worker_process.env,
            CELERY_BROKER_URL=url,
            TA_STALE_SECONDS="1",
            TA_SWEEP_SECONDS="1",
        )
        worker = WorkerProcess(env, tmp_path / "worker.log")
        worker.start()
        try:
            wait_for(lambda: Upload.objects.get(pk=upload.pk).status == "done", timeout=60)
        finally:
            worker.stop()
        upload.refresh_from_db()
        assert upload.traces_accepted == 1
    finally:
        redis.stop()
        point_app_at(old_url)
