"""The receiver's Celery task: complete a trace once its root span has arrived."""

from __future__ import annotations

import logging

from django.conf import settings

from common.retrying import retrying_task
from traces.otlp_receiver.store import Outcome, trace_finish

log = logging.getLogger(__name__)


@retrying_task(name="traces.tasks.otlp_finish_trace")
def otlp_finish_trace(project_id: int, trace_id: str) -> str:
    """Import the trace, or look again after TA_OTLP_GRACE_SECONDS while its spans still
    arrive. A lost message costs nothing: the stale-work sweep finds complete traces too."""
    outcome = trace_finish(project_id, trace_id)
    if outcome is Outcome.WAIT:
        finish_later(project_id, trace_id)
    return outcome.value


def finish_later(project_id: int, trace_id: str) -> bool:
    """Queue the completion check for TA_OTLP_GRACE_SECONDS from now; False when the broker is
    down (the sweep finishes the trace then)."""
    try:
        otlp_finish_trace.apply_async(
            args=[project_id, trace_id], countdown=float(settings.TA_OTLP_GRACE_SECONDS)
        )
    except Exception:  # noqa: BLE001 — kombu raises several types for an unreachable broker
        log.warning("broker unavailable: trace %s waits for the sweep", trace_id, exc_info=True)
        return False
    return True
