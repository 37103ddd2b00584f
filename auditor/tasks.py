"""The worker's entry point: Celery's autodiscovery imports `<app>.tasks` of each installed app,
so this module registers the tasks of auditor's sub-packages, and holds what the worker does
for the whole project: the periodic sweep of stale work and the memory ceiling."""

from __future__ import annotations

import logging
import threading

from celery import shared_task
from celery.signals import worker_process_init, worker_ready

from auditor import celery  # noqa: F401  (the app these tasks go to: auditor/__init__.py)
from auditor.exports import tasks as export_tasks  # noqa: F401  (registers the build task)
from auditor.exports.services import exports_resume_stale
from auditor.runs import tasks as run_tasks  # noqa: F401  (registers the run tasks)
from auditor.runs.services import audit_runs_resume_stale
from traces import search
from traces.otlp_receiver.store import traces_sweep
from traces.services import uploads_resume_stale

log = logging.getLogger(__name__)


@shared_task(name="auditor.tasks.resume_stale_work")
def resume_stale_work() -> dict:
    """Queue again what a killed worker (or a broker outage) left behind: audit runs, uploads
    and exports whose worker has been silent for TA_STALE_SECONDS; and import the OTLP
    receiver's traces that are complete (quiet for TA_OTLP_QUIET_SECONDS)."""
    return {
        "runs": audit_runs_resume_stale(),
        "uploads": uploads_resume_stale(),
        "exports": exports_resume_stale(),
        "search_indexed": search.index_missing(),
        "otlp_traces": traces_sweep(),
    }


@worker_process_init.connect
def _prepare_process(**kwargs):  # type: ignore[no-untyped-def]
    # What a run's start would load on first use — the VRR calibration and numpy, a noticeable
    # share of a run's start in a fresh worker — loaded with the pool process, before
    # tune_gc freezes what start made. The inline CLI keeps loading it only when it calibrates.
    import policies.vrr.calibration  # noqa: F401
    from auditor.limits import prepare_audit_process

    prepare_audit_process()


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
