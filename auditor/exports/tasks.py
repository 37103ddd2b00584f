"""Celery task of exports: thin, takes an id, calls the service. Sent to the `export` queue (see
`auditor.exports.services._enqueue`; a task's own `queue` attribute is deprecated in Celery).

Registered with the worker by `auditor/tasks.py` importing this module (autodiscovery only
looks at `auditor/tasks.py`); its name is kept from before the move, so queued messages and the
export queue's route still find it."""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError, connection

from auditor.exports import services

_TRANSIENT = (OperationalError, InterfaceError)


@shared_task(
    name="auditor.tasks_export.build_export",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=8,
)
def build_export(self, export_id: int) -> None:  # type: ignore[no-untyped-def]
    """Build one export's snapshot. Idempotent: a redelivered message finds it claimed or done.
    A transient database error puts the export back to pending and retries with backoff."""
    try:
        services.export_build(export_id=export_id)
    except _TRANSIENT as exc:
        connection.close()
        raise self.retry(exc=exc, countdown=min(5 * 2**self.request.retries, 300)) from exc
