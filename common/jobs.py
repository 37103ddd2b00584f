"""The lifecycle of a background job — an upload's ingest, an audit run, an export's build.

A job row moves pending → running → done | failed. A worker *claims* it with a conditional update
(exactly one claimant wins, so a redelivered message does nothing twice), reports a *heartbeat*
while it works, and writes the end state. A job whose message was lost (the broker was down when
it was queued) stays pending; one whose worker died keeps a silent heartbeat: the workers'
periodic sweep finds both (`stale`) and queues them again. (healthchecks' `sendalerts`.)
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q, QuerySet
from django.utils import timezone

log = logging.getLogger(__name__)


class Job(models.Model):
    """Status and timestamps of a job. Abstract: each job's table keeps these columns as its own
    (the same definitions the tables were created with, so no migration)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)


def stale_cutoff(older_than: float | None = None) -> datetime:
    """Silent for longer than this (TA_STALE_SECONDS by default) means presumed dead or lost."""
    age = float(settings.TA_STALE_SECONDS) if older_than is None else older_than
    return timezone.now() - timedelta(seconds=age)


def job_claim(model: type[Job], pk: int, *, take_over_stale: bool = False, **changes: Any) -> bool:
    """Take the job for this worker: pending → running, by one conditional update, so of two
    claims exactly one wins. With `take_over_stale`, also a running job whose worker has been
    silent past the cutoff (it is presumed dead; the work must be safe to redo). `changes` are
    written in the same update (attempt counters, cleared errors)."""
    now = timezone.now()
    claimable = Q(status=Job.Status.PENDING)
    if take_over_stale:
        claimable |= Q(status=Job.Status.RUNNING, heartbeat_at__lt=stale_cutoff())
    return bool(
        model.objects.filter(claimable, pk=pk).update(
            status=Job.Status.RUNNING, started_at=now, heartbeat_at=now, **changes
        )
    )


def job_heartbeat(jobs: QuerySet[Any], **changes: Any) -> int:
    """Say the worker is alive (and write progress in the same update)."""
    return jobs.update(heartbeat_at=timezone.now(), **changes)


def job_enqueue(task: Any, *args: Any, queue: str | None = None) -> bool:
    """Send the task's message; with the broker down, log and return False — the job stays
    pending (nothing is lost) and the sweep queues it once the broker is back."""
    try:
        if queue is None:
            task.delay(*args)
        else:
            task.apply_async(args=list(args), queue=queue)
    except Exception:  # noqa: BLE001 — kombu raises several types for an unreachable broker
        log.warning("broker unavailable: %s%s waits for the sweep", task.name, args, exc_info=True)
        return False
    return True


def stale_pending(model: type[Job], cutoff: datetime) -> QuerySet[Any]:
    """Jobs still pending after the cutoff: their message was lost."""
    return model.objects.filter(status=Job.Status.PENDING, created_at__lt=cutoff)


def stale_running(model: type[Job], cutoff: datetime) -> QuerySet[Any]:
    """Running jobs whose worker has been silent since before the cutoff: presumed dead."""
    return model.objects.filter(status=Job.Status.RUNNING, heartbeat_at__lt=cutoff)


def stale(model: type[Job], cutoff: datetime) -> QuerySet[Any]:
    """Both kinds of left-behind job, for a sweep that queues them the same way."""
    return model.objects.filter(
        Q(status=Job.Status.PENDING, created_at__lt=cutoff)
        | Q(status=Job.Status.RUNNING, heartbeat_at__lt=cutoff)
    )
