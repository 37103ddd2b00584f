"""Celery tasks of audit runs: thin, take ids, call the services. Registered by auditor/tasks.py
(the module Celery's autodiscovery reads); their names are kept from before the move, so messages
already queued by an older version still find them."""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError, connection

from auditor.runs import services, work

# Transient database errors are retried (after dropping the dead connection); the work is
# idempotent, so a retry after a partial chunk only does what is left.
_TRANSIENT = (OperationalError, InterfaceError)


@shared_task(
    name="auditor.tasks.start_run",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=8,
)
def start_run(self, run_id: int) -> None:  # type: ignore[no-untyped-def]
    try:
        services.audit_run_start(run_id=run_id)
    except _TRANSIENT as exc:
        connection.close()
        raise self.retry(exc=exc, countdown=min(5 * 2**self.request.retries, 300)) from exc


@shared_task(
    name="auditor.tasks.audit_chunk",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=8,
)
def audit_chunk(self, run_id: int, trace_ids: list[int]) -> int:  # type: ignore[no-untyped-def]
    try:
        return work.audit_chunk_process(run_id=run_id, trace_ids=trace_ids)
    except _TRANSIENT as exc:
        connection.close()
        raise self.retry(exc=exc, countdown=min(5 * 2**self.request.retries, 300)) from exc
