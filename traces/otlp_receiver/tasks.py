"""The receiver's Celery task: complete a trace once its root span has arrived."""

from __future__ import annotations

import logging

from django.conf import settings

from common.retrying import retrying_task
from traces.otlp_receiver.store import UPLOAD_MAX_TRACES, Outcome, due_with_spans, traces_finish

log = logging.getLogger(__name__)


@retrying_task(name="traces.tasks.otlp_finish_traces")
def otlp_finish_traces(project_id: int, trace_ids: list[str]) -> dict:
    """Import the complete ones of these traces (one upload), and look again after
    TA_OTLP_GRACE_SECONDS at those whose spans still arrive. A lost message costs nothing: the
    stale-work sweep finds complete traces too.

    Other traces of the project that are complete by now join the same upload, up to
    UPLOAD_MAX_TRACES traces and TA_OTLP_UPLOAD_MAX_SPANS spans: there are some only when the
    workers are behind (each trace's own task is still queued; it then finds nothing to do), so
    uploads grow exactly then, and an upload's fixed cost is paid once for many requests
    instead of once for each."""
    mine = set(trace_ids)
    due = due_with_spans(UPLOAD_MAX_TRACES, project_id=project_id)
    room = settings.TA_OTLP_UPLOAD_MAX_SPANS - sum(n for _p, t, n in due if t in mine)
    others: list[str] = []
    for _p, trace_id, n in due:
        if trace_id in mine:
            continue
        if n > room or len(others) + len(trace_ids) >= UPLOAD_MAX_TRACES:
            break
        others.append(trace_id)
        room -= n
    outcomes = traces_finish(project_id, [*trace_ids, *others])
    waiting = [t for t, o in outcomes.items() if o is Outcome.WAIT]
    if waiting:
        finish_later(project_id, waiting)
    return {t: o.value for t, o in outcomes.items()}


def finish_later(project_id: int, trace_ids: list[str]) -> bool:
    """Queue the completion check of the traces for TA_OTLP_GRACE_SECONDS from now (one message
    per request); False when the broker is down (the sweep finishes the traces then)."""
    try:
        otlp_finish_traces.apply_async(
            args=[project_id, trace_ids], countdown=float(settings.TA_OTLP_GRACE_SECONDS)
        )
    except Exception:  # noqa: BLE001 — kombu raises several types for an unreachable broker
        log.warning("broker unavailable: %d traces wait for the sweep", len(trace_ids))
        return False
    return True
