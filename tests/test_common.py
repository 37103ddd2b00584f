"""common/: the retrying task decorator and the job lifecycle, on real PostgreSQL rows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from common.jobs import job_claim, stale, stale_cutoff
from common.retrying import backoff, retrying_task


def test_backoff_doubles_from_five_seconds_up_to_five_minutes():
    assert [backoff(n) for n in range(8)] == [5, 10, 20, 40, 80, 160, 300, 300]


def test_a_transient_database_error_runs_the_hook_and_retries():
    calls: list[int] = []
    hooked: list[int] = []

    def flaky(job_id: int) -> str:
        calls.append(job_id)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return "done"

    task = retrying_task(name="tests.common.flaky", on_transient=hooked.append)(flaky)
    assert task.name == "tests.common.flaky" and task.max_retries == 8 and task.acks_late
    assert task.apply(args=[7]).get() == "done"
    assert calls == [7, 7] and hooked == [7]


def test_a_permanent_error_is_not_retried():
    calls: list[int] = []

    def broken(job_id: int) -> None:
        calls.append(job_id)
        raise ValueError("bad data")

    task = retrying_task(name="tests.common.broken")(broken)
    with pytest.raises(ValueError):
        task.apply(args=[1]).get()
    assert calls == [1]


@pytest.mark.django_db
def test_a_job_is_claimed_once_and_a_silent_one_taken_over(project):  # type: ignore[no-untyped-def]
    from traces.models import Upload

    upload = Upload.objects.create(
        project=project, filename="f", size=1, content_hash="h", source="cli"
    )
    assert job_claim(Upload, upload.pk)
    assert not job_claim(Upload, upload.pk)  # a redelivered message does nothing
    assert not job_claim(Upload, upload.pk, take_over_stale=True)  # its worker is alive
    assert list(stale(Upload, stale_cutoff())) == []
    Upload.objects.filter(pk=upload.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=3600)
    )
    assert list(stale(Upload, stale_cutoff())) == [upload]
    assert job_claim(Upload, upload.pk, take_over_stale=True)  # the worker is presumed dead
    upload.refresh_from_db()
    assert upload.status == "running" and upload.heartbeat_at > stale_cutoff()
