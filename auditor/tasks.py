"""Celery tasks of audit runs: thin, take ids, call the services."""

from __future__ import annotations

import logging
import threading

from celery import shared_task
from celery.signals import worker_process_init, worker_ready
from django.db import InterfaceError, OperationalError, connection

from auditor import (
    services,
    tasks_export,  # noqa: F401  (registers the export build task)
)
from traces import search
from traces.services import uploads_resume_stale

log = logging.getLogger(__name__)


# Transient database errors are retried (after dropping the dead connection); the work is
# idempotent, so a retry after a partial chunk only does what is left.
_TRANSIENT = (OperationalError, InterfaceError)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=8)
def start_run(self, run_id: int) -> None:  # type: ignore[no-untyped-def]
    try:
        services.audit_run_start(run_id=run_id)
    except _TRANSIENT as exc:
        connection.close()
        raise self.retry(exc=exc, countdown=min(5 * 2**self.request.retries, 300)) from exc


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=8)
def audit_chunk(self, run_id: int, trace_ids: list[int]) -> int:  # type: ignore[no-untyped-def]
    try:
        return services.audit_chunk_process(run_id=run_id, trace_ids=trace_ids)
    except _TRANSIENT as exc:
        connection.close()
        raise self.retry(exc=exc, countdown=min(5 * 2**self.request.retries, 300)) from exc


@shared_task
def resume_stale_work() -> dict:
    """Queue again what a killed worker (or a broker outage) left behind: audit runs, uploads
    and exports whose worker has been silent for TA_STALE_SECONDS."""
    from auditor.exports import exports_resume_stale

    return {
        "runs": services.audit_runs_resume_stale(),
        "uploads": uploads_resume_stale(),
        "exports": exports_resume_stale(),
        "search_indexed": search.index_missing(),
    }


@worker_process_init.connect
def _limit_memory(**kwargs):  # type: ignore[no-untyped-def]
    from auditor.limits import apply_memory_limit

    apply_memory_limit()


def _queue_sweep() -> None:
    try:
        resume_stale_work.delay()
    except Exception:  # noqa: BLE001 — the broker is down; the next sweep tries again
        log.warning("could not queue the stale-work sweep", exc_info=True)


@worker_ready.connect
def _sweep_on_start_and_periodically(sender=None, **kwargs):  # type: ignore[no-untyped-def]
    """A worker starting up is often one replacing a killed one: look for its leftovers now,
    then every TA_SWEEP_SECONDS — which also queues uploads accepted while the broker was down,
    once it is back. The sweep itself runs as a task, in a worker process."""
    from django.conf import settings

    _queue_sweep()
    interval = settings.TA_SWEEP_SECONDS

    def loop() -> None:
        while not stop.wait(interval):
            _queue_sweep()

    stop = threading.Event()
    threading.Thread(target=loop, name="stale-work-sweep", daemon=True).start()
