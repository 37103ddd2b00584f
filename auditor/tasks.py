"""Celery tasks of audit runs: thin, take ids, call the services."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_process_init, worker_ready

from auditor import services

log = logging.getLogger(__name__)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def start_run(run_id: int) -> None:
    services.audit_run_start(run_id=run_id)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def audit_chunk(run_id: int, trace_ids: list[int]) -> int:
    return services.audit_chunk_process(run_id=run_id, trace_ids=trace_ids)


@shared_task
def resume_stale_work() -> dict:
    """Queue again what a killed worker left behind: audit runs and uploads whose worker has
    been silent for TA_STALE_SECONDS."""
    from traces.services import uploads_resume_stale

    return {
        "runs": services.audit_runs_resume_stale(),
        "uploads": uploads_resume_stale(),
    }


@worker_process_init.connect
def _limit_memory(**kwargs):  # type: ignore[no-untyped-def]
    from auditor.limits import apply_memory_limit

    apply_memory_limit()


@worker_ready.connect
def _resume_on_start(sender=None, **kwargs):  # type: ignore[no-untyped-def]
    # A worker starting up is often one replacing a killed one: look for its leftovers. Done
    # through the queue so the check runs in a worker process with a normal task context.
    try:
        resume_stale_work.delay()
    except Exception:  # noqa: BLE001 — never keep a worker from starting
        log.exception("could not queue the stale-work check")
