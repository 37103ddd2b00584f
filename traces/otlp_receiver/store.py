"""The span buffer: accepting spans, deciding when a trace is complete, importing it.

A request's spans go in with one INSERT … ON CONFLICT DO NOTHING on (project, trace id, span
id): an exporter that retries a request it saw fail stores nothing twice. A trace is complete
TA_OTLP_GRACE_SECONDS after its root span (one without a parent) arrived with no later span,
or once no span of it arrived for TA_OTLP_QUIET_SECONDS. Completing it creates an upload (source
and format `otlp`) and marks the trace's spans imported into it, in one transaction; the upload
stores no file — its spans stay here, naming it — and its processing hands them, as one parsed
OTLP/JSON request, to the OTLP importer: from there the path is a file upload's, so the trace is
what a file upload of the same spans gives (`buffer`). A worker killed on the way leaves the
spans buffered for the next attempt, and the upload itself is processed (and resumed) like any
other.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from enum import Enum

import orjson
import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Func, IntegerField, Max, Q
from django.db.models.functions import Length
from django.utils import timezone

from traces.models import Project, Upload
from traces.otlp_receiver.backlog import backlog_add_sql, backlog_recount_all, backlog_release
from traces.otlp_receiver.decode import SpanRow
from traces.otlp_receiver.models import OtlpSpan
from traces.services import upload_create_buffered

# An upload of the receiver holds at most this many traces, and no more spans than
# TA_OTLP_UPLOAD_MAX_SPANS once its first trace is in (`traces_due`): its processing holds its
# spans in memory as one request, as a file import holds a file's.
UPLOAD_MAX_TRACES = 5000


class Outcome(Enum):
    IMPORTED = "imported"
    WAIT = "wait"  # not complete yet: spans still arriving
    NOTHING = "nothing"  # no buffered span (already imported, or another worker took it)
    LATE = "late"  # its trace was imported before these spans arrived


def spans_insert(project_id: int, rows: list[SpanRow]) -> list[str]:
    """Buffer the spans in one statement; the trace ids whose root span came with them.

    On PostgreSQL the request's spans travel as arrays, one a column, expanded by the server
    (`unnest`) and bound server-side in binary: each array is one value for the driver, its
    elements packed by length, where client-side binding quotes and escapes every element in
    Python. A resource or scope shared by the request's spans is sent once and referred to by
    position."""
    if not rows:
        return []
    now = timezone.now()
    table = OtlpSpan._meta.db_table
    columns = "project_id, trace_id, span_id, root, received_at, resource, scope, span, state, size"
    state = OtlpSpan.State.BUFFERED.value
    shared: dict[int, int] = {}
    values: list[str] = []
    lengths: list[int] = []

    def position(value: dict) -> int:
        key = id(value)
        if key not in shared:
            shared[key] = len(values) + 1  # SQL arrays count from 1
            values.append(_storable(value))
            lengths.append(len(values[-1].encode()))
        return shared[key]

    resources = [position(r.resource) for r in rows]
    scopes = [position(r.scope) for r in rows]
    documents = [_storable(r.span) for r in rows]
    sizes = [
        len(doc.encode()) + lengths[rs - 1] + lengths[sc - 1]
        for doc, rs, sc in zip(documents, resources, scopes, strict=True)
    ]
    if connection.vendor == "postgresql":
        # The spans stored (a retry's are not) count in the project's backlog, in the same
        # statement.
        sql = (
            f"WITH ins AS (INSERT INTO {table} ({columns})"
            " SELECT %b, u.t, u.s, u.r, %b, (v.j)[u.rs]::jsonb, (v.j)[u.sc]::jsonb, u.sp::jsonb,"
            " %b, u.sz"
            " FROM unnest(%b::text[], %b::text[], %b::bool[], %b::int[], %b::int[], %b::text[],"
            " %b::int[]) AS u(t, s, r, rs, sc, sp, sz), (SELECT %b::text[] AS j) AS v"
            " ON CONFLICT (project_id, trace_id, span_id) DO NOTHING"
            " RETURNING size) " + backlog_add_sql()
        )
        params: list = [
            project_id,
            now,
            state,
            [r.trace_id for r in rows],
            [r.span_id for r in rows],
            [r.root for r in rows],
            resources,
            scopes,
            documents,
            sizes,
            values,
            project_id,
        ]
        _execute_bound(sql, params)
    else:
        sql = (
            f"INSERT INTO {table} ({columns}) VALUES "
            + ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"] * len(rows))
            + " ON CONFLICT (project_id, trace_id, span_id) DO NOTHING"
        )
        params = []
        for r, rs, sc, doc, size in zip(rows, resources, scopes, documents, sizes, strict=True):
            params += [project_id, r.trace_id, r.span_id, r.root, now]
            params += [values[rs - 1], values[sc - 1], doc, state, size]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
        backlog_recount_all(project_id=project_id)
    return list(dict.fromkeys(r.trace_id for r in rows if r.root))


def _execute_bound(sql: str, params: list) -> None:
    """Run a statement whose parameters are bound on the server (`%b`: binary). Django's
    cursors bind client-side, quoting every element of an array in Python; this cursor works
    in the open transaction of the same connection."""
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params)


def _storable(value: object) -> str:
    """JSON text jsonb accepts: it cannot hold U+0000, so a NUL in a span (a string attribute,
    say) is stored as U+FFFD, as the file import stores it (`reader.parse_line`)."""
    text = orjson.dumps(value).decode()
    return text.replace("\\u0000", "\\ufffd") if "\\u0000" in text else text


def _complete(spans: list[tuple[int, bool, datetime]]) -> bool:
    last = max(received for _pk, _root, received in spans)
    if any(root for _pk, root, _received in spans):
        wait = float(settings.TA_OTLP_GRACE_SECONDS)
    else:
        wait = float(settings.TA_OTLP_QUIET_SECONDS)
    return timezone.now() - last >= timedelta(seconds=wait)


def traces_finish(project_id: int, trace_ids: list[str], *, force: bool = False) -> dict:
    """Import those of the traces that are complete (all, with `force`) as one upload, and say
    what became of each ({trace id: Outcome}). Idempotent: the spans are locked and marked in
    the transaction that creates the upload. The upload stores no file: its spans stay here,
    naming it, and its processing reads them (`buffer`)."""
    outcomes: dict[str, Outcome] = {}
    with transaction.atomic():
        # Only what completion needs: the span documents are read once, by the import.
        rows = (
            OtlpSpan.objects.select_for_update()
            .filter(project_id=project_id, trace_id__in=trace_ids, state=OtlpSpan.State.BUFFERED)
            .order_by("received_at", "id")
            .annotate(stored=_stored_size())
            .values_list("pk", "trace_id", "root", "received_at", "stored", "size")
        )
        by_trace: dict[str, list[tuple[int, bool, datetime]]] = {}
        sizes: dict[int, int] = {}
        row_sizes: dict[int, int] = {}
        for pk, trace_id, root, received, size, row_size in rows:
            by_trace.setdefault(trace_id, []).append((pk, root, received))
            sizes[pk] = size
            row_sizes[pk] = row_size
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
        late = [pk for t in imported for pk, _root, _received in by_trace.pop(t)]
        OtlpSpan.objects.filter(pk__in=late).update(state=OtlpSpan.State.LATE)
        outcomes.update(dict.fromkeys(imported, Outcome.LATE))
        pks = [pk for spans in by_trace.values() for pk, _root, _received in spans]
        leaving = late + pks
        backlog_release(project_id, len(leaving), sum(row_sizes[pk] for pk in leaving))
        if not by_trace:
            return outcomes
        first = next(iter(by_trace))
        name = f"otlp-{first}.json" if len(by_trace) == 1 else f"otlp-{first}-{len(by_trace)}.json"
        upload = upload_create_buffered(
            project=Project.objects.get(pk=project_id),
            filename=name,
            # The spans' row ids: unique to this upload, as its spans are.
            content_hash=hashlib.sha256(orjson.dumps(pks)).hexdigest(),
            size=sum(sizes[pk] for pk in pks),
            fmt="otlp",
            source=Upload.Source.OTLP,
        )
        if connection.vendor == "postgresql":
            _execute_bound(
                f"UPDATE {OtlpSpan._meta.db_table} SET state = %b, upload_id = %b"
                " WHERE id = ANY(%b::bigint[])",
                [OtlpSpan.State.IMPORTED.value, upload.pk, pks],
            )
        else:
            OtlpSpan.objects.filter(pk__in=pks).update(state=OtlpSpan.State.IMPORTED, upload=upload)
        outcomes.update(dict.fromkeys(by_trace, Outcome.IMPORTED))
    return outcomes


def _stored_size() -> Func:
    """A span's bytes as stored (an upload's size is its spans'): on PostgreSQL read from the
    value's header, without turning the jsonb back into text."""
    if connection.vendor == "postgresql":
        return Func("span", function="pg_column_size", output_field=IntegerField())
    return Length("span")


def trace_finish(project_id: int, trace_id: str, *, force: bool = False) -> Outcome:
    """One trace's `traces_finish`."""
    return traces_finish(project_id, [trace_id], force=force)[trace_id]


def traces_due(
    limit: int = UPLOAD_MAX_TRACES, *, project_id: int | None = None, max_spans: int | None = None
) -> list[tuple[int, str]]:
    """(project id, trace id) of buffered traces that are complete now (of one project), the
    longest complete first; with `max_spans`, only as many as hold that many spans together
    (at least one)."""
    due: list[tuple[int, str]] = []
    spans = 0
    for project, trace_id, n in due_with_spans(limit, project_id=project_id):
        spans += n
        if due and max_spans is not None and spans > max_spans:
            break
        due.append((project, trace_id))
    return due


def due_with_spans(limit: int, *, project_id: int | None = None) -> list[tuple[int, str, int]]:
    """`traces_due` with each trace's number of buffered spans."""
    now = timezone.now()
    quiet = now - timedelta(seconds=float(settings.TA_OTLP_QUIET_SECONDS))
    grace = now - timedelta(seconds=float(settings.TA_OTLP_GRACE_SECONDS))
    buffered = OtlpSpan.objects.filter(state=OtlpSpan.State.BUFFERED)
    if project_id is not None:
        buffered = buffered.filter(project_id=project_id)
    rows = (
        buffered.values("project_id", "trace_id")
        .annotate(last=Max("received_at"), roots=Count("pk", filter=Q(root=True)), n=Count("pk"))
        .filter(Q(last__lt=quiet) | Q(roots__gt=0, last__lt=grace))
        .order_by("last")[:limit]
    )
    return [(r["project_id"], r["trace_id"], r["n"]) for r in rows]


def traces_sweep() -> list[str]:
    """Import every complete buffered trace, one upload per project (the stale-work sweep calls
    this): traces that went quiet without a root span, and any whose completion task was lost.
    Each project's backlog is counted again from the buffer on the way."""
    due: dict[int, list[str]] = {}
    for project_id, trace_id in traces_due(max_spans=settings.TA_OTLP_UPLOAD_MAX_SPANS):
        due.setdefault(project_id, []).append(trace_id)
    backlog_recount_all()
    done = []
    for project_id, trace_ids in due.items():
        outcomes = traces_finish(project_id, trace_ids)
        done += [t for t, o in outcomes.items() if o is Outcome.IMPORTED]
    return done
