"""Celery task of exports: thin, takes an id, calls the service. Sent to the `export` queue (see
`auditor.exports.services._enqueue`; a task's own `queue` attribute is deprecated in Celery).

Registered with the worker by `auditor/tasks.py` importing this module (autodiscovery only
looks at `auditor/tasks.py`); its name is kept from before the move, so queued messages and the
export queue's route still find it."""

from __future__ import annotations

from auditor.exports import services
from common.retrying import retrying_task


@retrying_task(name="auditor.tasks_export.build_export")
def build_export(export_id: int) -> None:
    """Build one export's snapshot. Idempotent: a redelivered message finds it claimed or done.
    A transient database error puts the export back to pending (in the service) and retries."""
    services.export_build(export_id=export_id)
