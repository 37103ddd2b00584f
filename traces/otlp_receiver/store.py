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
from django.db import connection, transaction
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
    """Buffer the spans in one statement; the trace ids whose root span came with them.

    The JSON columns are written from orjson's text (a resource or scope shared by the request's
    spans is serialized once): the ORM's per-field encoder was most of a request's time."""
    if not rows:
        return []
    now = timezone.now()
    dumped: dict[int, str] = {}

    def text(value: dict) -> str:
        key = id(value)
        if key not in dumped:
            dumped[key] = orjson.dumps(value).decode()
        return dumped[key]

    cast = "::jsonb" if connection.vendor == "postgresql" else ""
    one = f"(%s, %s, %s, %s, %s, %s{cast}, %s{cast}, %s{cast}, %s)"
    params: list = []
    for r in rows:
        params += [project_id, r.trace_id, r.span_id, r.root, now]
        params += [text(r.resource), text(r.scope), orjson.dumps(r.span).decode()]
        params.append(OtlpSpan.State.BUFFERED.value)
    table = OtlpSpan._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (project_id, trace_id, span_id, root, received_at, resource,"
            f" scope, span, state) VALUES {', '.join([one] * len(rows))}"
            " ON CONFLICT (project_id, trace_id, span_id) DO NOTHING",
            params,
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


def traces_finish(project_id: int, trace_ids: list[str], *, force: bool = False) -> dict:
    """Import those of the traces that are complete (all, with `force`) as one upload, and say
    what became of each ({trace id: Outcome}). Idempotent: the spans are locked and marked in
    the transaction that creates the upload."""
    outcomes: dict[str, Outcome] = {}
    with transaction.atomic():
        rows = list(
            OtlpSpan.objects.select_for_update()
            .filter(project_id=project_id, trace_id__in=trace_ids, state=OtlpSpan.State.BUFFERED)
            .order_by("received_at", "id")
        )
        by_trace: dict[str, list[OtlpSpan]] = {}
        for row in rows:
            by_trace.setdefault(row.trace_id, []).append(row)
        for trace_id in trace_ids:
            spans = by_trace.get(trace_id)
            if not spans:
                outcomes[trace_id] = Outcome.NOTHING
            elif not force and not _complete(spans):
                outcomes[trace_id] = Outcome.WAIT
                del by_trace[trace_id]
        imported = set(
            OtlpSpan.objects.filter(
                project_id=project_id, trace_id__in=list(by_trace), state=OtlpSpan.State.IMPORTED
            ).values_list("trace_id", flat=True)
        )
        late = [s.pk for t in imported for s in by_trace.pop(t)]
        OtlpSpan.objects.filter(pk__in=late).update(state=OtlpSpan.State.LATE)
        outcomes.update(dict.fromkeys(imported, Outcome.LATE))
        if not by_trace:
            return outcomes
        first = next(iter(by_trace))
        name = f"otlp-{first}.json" if len(by_trace) == 1 else f"otlp-{first}-{len(by_trace)}.json"
        upload, _created = upload_create(
            project=Project.objects.get(pk=project_id),
            fileobj=document(s for spans in by_trace.values() for s in spans),
            filename=name,
            fmt="otlp",
            source=Upload.Source.OTLP,
        )
        OtlpSpan.objects.filter(pk__in=[s.pk for v in by_trace.values() for s in v]).update(
            state=OtlpSpan.State.IMPORTED, upload=upload
        )
        outcomes.update(dict.fromkeys(by_trace, Outcome.IMPORTED))
    return outcomes


def trace_finish(project_id: int, trace_id: str, *, force: bool = False) -> Outcome:
    """One trace's `traces_finish`."""
    return traces_finish(project_id, [trace_id], force=force)[trace_id]


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
    """Import every complete buffered trace, one upload per project (the stale-work sweep calls
    this): traces that went quiet without a root span, and any whose completion task was lost."""
    due: dict[int, list[str]] = {}
    for project_id, trace_id in traces_due():
        due.setdefault(project_id, []).append(trace_id)
    done = []
    for project_id, trace_ids in due.items():
        outcomes = traces_finish(project_id, trace_ids)
        done += [t for t, o in outcomes.items() if o is Outcome.IMPORTED]
    return done
