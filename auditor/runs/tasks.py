"""Celery tasks of audit runs: thin, take ids, call the services. Registered by auditor/tasks.py
(the module Celery's autodiscovery reads); their names are kept from before the move, so messages
already queued by an older version still find them."""

from __future__ import annotations

from auditor.runs import services, stalls, work
from common.retrying import TRANSIENT, retrying_task


@retrying_task(name="auditor.tasks.start_run")
def start_run(run_id: int) -> None:
    services.audit_run_start(run_id=run_id)


@retrying_task(name="auditor.tasks.audit_chunk")
def audit_chunk(run_id: int, trace_ids: list[int]) -> int:
    # Idempotent: a retry after a partial chunk only audits what is still pending.
    try:
        return work.audit_chunk_process(run_id=run_id, trace_ids=trace_ids)
    except TRANSIENT:
        raise  # retried by the task
    except Exception as exc:
        # counted on the run: one reason too many times fails it (auditor.runs.stalls)
        stalls.record_stall(run_id, stalls.reason_of(exc))
        raise


@retrying_task(name="auditor.tasks.calibrate_run")
def calibrate_run(run_id: int) -> None:
    services.audit_run_calibrate(run_id=run_id)
