"""The span buffer: accepting spans, deciding when a trace is complete, importing it.

A request's spans go in with one INSERT … ON CONFLICT DO NOTHING on (project, trace id, span
id): an exporter that retries a request it saw fail stores nothing twice. A trace is complete
TA_OTLP_GRACE_SECONDS after its root span (one without a parent) arrived with no later span,
or once no span of it arrived for TA_OTLP_QUIET_SECONDS. Completing it writes its buffered spans
as one OTLP/JSON document and hands that to the ordinary upload path with the OTLP importer —
the trace is what a file upload of the same spans gives — and marks the spans imported, in one
transaction: a worker killed on the way leaves the spans buffered for the next attempt, and the
upload itself is processed (and resumed) like any other.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from enum import Enum

import orjson
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from traces.models import Project, Upload
from traces.otlp_receiver.decode import SpanRow
from traces.otlp_receiver.models import OtlpSpan
from traces.services import upload_create

SWEEP_BATCH = 500


class Outcome(Enum):
    IMPORTED = "imported"
    WAIT = "wait"  # not complete yet: spans still arriving
    NOTHING = "nothing"  # no buffered span (already imported, or another worker took it)
    LATE = "late"  # its trace was imported before these spans arrived


def spans_insert(project_id: int, rows: list[SpanRow]) -> list[str]:
    """Buffer the spans; the trace ids whose root span came with them."""
    now = timezone.now()
    OtlpSpan.objects.bulk_create(
        [
            OtlpSpan(
                project_id=project_id,
                trace_id=r.trace_id,
                span_id=r.span_id,
                root=r.root,
                received_at=now,
                resource=r.resource,
                scope=r.scope,
                span=r.span,
            )
            for r in rows
        ],
        ignore_conflicts=True,
    )
    return list(dict.fromkeys(r.trace_id for r in rows if r.root))


def _complete(spans: list[OtlpSpan]) -> bool:
    last = max(s.received_at for s in spans)
    if any(s.root for s in spans):
        wait = float(settings.TA_OTLP_GRACE_SECONDS)
    else:
        wait = float(settings.TA_OTLP_QUIET_SECONDS)
    return timezone.now() - last >= timedelta(seconds=wait)


def document(spans: Iterable[OtlpSpan]) -> bytes:
    """The spans as one OTLP/JSON ExportTraceServiceRequest, grouped by resource and scope in
    the order they were received."""
    groups: dict[bytes, dict] = {}
    for s in spans:
        resource = orjson.dumps(s.resource, option=orjson.OPT_SORT_KEYS)
        scope = orjson.dumps(s.scope, option=orjson.OPT_SORT_KEYS)
        rs = groups.setdefault(resource, {"resource": s.resource, "scopes": {}})
        ss = rs["scopes"].setdefault(scope, {"scope": s.scope, "spans": []})
        ss["spans"].append(s.span)
    return orjson.dumps(
        {
            "resourceSpans": [
                {"resource": rs["resource"], "scopeSpans": list(rs["scopes"].values())}
                for rs in groups.values()
            ]
        }
    )


def trace_finish(project_id: int, trace_id: str, *, force: bool = False) -> Outcome:
    """Import the trace if it is complete (or `force`). Idempotent: the spans are locked and
    marked in the transaction that creates the upload."""
    with transaction.atomic():
        spans = list(
            OtlpSpan.objects.select_for_update()
            .filter(project_id=project_id, trace_id=trace_id, state=OtlpSpan.State.BUFFERED)
            .order_by("received_at", "id")
        )
        if not spans:
            return Outcome.NOTHING
        if not force and not _complete(spans):
            return Outcome.WAIT
        ids = [s.pk for s in spans]
        done = OtlpSpan.objects.filter(
            project_id=project_id, trace_id=trace_id, state=OtlpSpan.State.IMPORTED
        )
        if done.exists():
            OtlpSpan.objects.filter(pk__in=ids).update(state=OtlpSpan.State.LATE)
            return Outcome.LATE
        upload, _created = upload_create(
            project=Project.objects.get(pk=project_id),
            fileobj=document(spans),
            filename=f"otlp-{trace_id}.json",
            fmt="otlp",
            source=Upload.Source.OTLP,
        )
        OtlpSpan.objects.filter(pk__in=ids).update(state=OtlpSpan.State.IMPORTED, upload=upload)
    return Outcome.IMPORTED


def traces_due(limit: int = SWEEP_BATCH) -> list[tuple[int, str]]:
    """(project id, trace id) of buffered traces that are complete now."""
    now = timezone.now()
    quiet = now - timedelta(seconds=float(settings.TA_OTLP_QUIET_SECONDS))
    grace = now - timedelta(seconds=float(settings.TA_OTLP_GRACE_SECONDS))
    rows = (
        OtlpSpan.objects.filter(state=OtlpSpan.State.BUFFERED)
        .values("project_id", "trace_id")
        .annotate(last=Max("received_at"), roots=Count("pk", filter=Q(root=True)))
        .filter(Q(last__lt=quiet) | Q(roots__gt=0, last__lt=grace))
        .order_by("last")[:limit]
    )
    return [(r["project_id"], r["trace_id"]) for r in rows]


def traces_sweep() -> list[str]:
    """Import every complete buffered trace (the stale-work sweep calls this): traces that went
    quiet without a root span, and any whose completion task was lost."""
    done = []
    for project_id, trace_id in traces_due():
        if trace_finish(project_id, trace_id) is Outcome.IMPORTED:
            done.append(trace_id)
    return done
