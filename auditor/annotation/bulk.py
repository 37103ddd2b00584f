"""Traces chosen on the traces list, added to an annotation queue of the list's run: each trace's
results in that run, asked the questions of the queue's kinds that apply to them (as the queue
itself would ask them). Items already in the queue are left as they are."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from auditor.annotation.models import AnnotationItem, AnnotationQueue
from auditor.annotation.schema import KINDS, AnnotationRejected
from auditor.annotation.services import _candidate_items
from auditor.runs.models import AuditRun

MAX_TRACES = 500  # one list page is 50; a crafted form cannot ask for the whole project


def queue_add_traces(*, queue: AnnotationQueue, trace_ids: Iterable[int]) -> int:
    """Add the traces' items to `queue`; return how many items are new."""
    ids = sorted({int(t) for t in trace_ids})
    if not ids:
        raise AnnotationRejected("choose at least one trace")
    if len(ids) > MAX_TRACES:
        raise AnnotationRejected(f"at most {MAX_TRACES} traces at a time")
    with transaction.atomic():
        before = AnnotationItem.objects.filter(queue=queue).count()
        AnnotationItem.objects.bulk_create(
            list(_candidate_items(queue, ids)), ignore_conflicts=True, batch_size=2000
        )
        return AnnotationItem.objects.filter(queue=queue).count() - before


def queue_for_traces(*, run: AuditRun, name: str, user=None) -> AnnotationQueue:  # type: ignore[no-untyped-def]
    """A new, empty queue for chosen traces: every kind of question, asked of every result of
    theirs it applies to (source "filter" with no filter: the choice of traces is the filter)."""
    if run.status != AuditRun.Status.DONE:
        raise AnnotationRejected("the audit run is not finished yet")
    return AnnotationQueue.objects.create(
        run=run,
        name=(name or "").strip()[:200] or "chosen traces",
        kinds=list(KINDS),
        source=AnnotationQueue.Source.FILTER,
        created_by=user if getattr(user, "pk", None) is not None else None,
    )
