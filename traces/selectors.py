"""Read-side queries for traces, always scoped to what the caller may see."""

from __future__ import annotations

from collections.abc import Sequence

import orjson
from django.db import connection
from django.db.models import QuerySet
from django.db.models.fields.json import KeyTransform
from django.http import Http404

from traces.models import Event, Membership, Project, Trace, Upload


def project_list(*, user) -> QuerySet[Project]:  # type: ignore[no-untyped-def]
    project = getattr(user, "project", None)
    if project is not None:  # a project token sees its own project only
        return Project.objects.filter(pk=project.pk)
    if not getattr(user, "is_authenticated", False):
        return Project.objects.none()
    return Project.objects.filter(membership__user=user).order_by("name")


def project_get(*, user, project_id: int) -> Project:  # type: ignore[no-untyped-def]
    """The project, or 404 — also when it exists but the user is not a member, so outsiders
    cannot probe which ids exist."""
    project = project_list(user=user).filter(pk=project_id).first()
    if project is None:
        raise Http404("no such project")
    return project


def project_by_ref(*, user, ref: str) -> Project | None:  # type: ignore[no-untyped-def]
    """A project the user may see, named by id or by name (the APIs accept either); None when
    there is none, so each API answers in its own error shape."""
    visible = project_list(user=user)
    by_id = ref.isascii() and ref.isdigit() and len(ref) < 19
    project = visible.filter(pk=int(ref)).first() if by_id else None
    return project or visible.filter(name=ref).first()


def role_of(*, user, project: Project) -> str | None:  # type: ignore[no-untyped-def]
    if getattr(user, "project", None) is not None:
        return "uploader" if user.project.pk == project.pk else None
    return (
        Membership.objects.filter(user=user, project=project).values_list("role", flat=True).first()
    )


def project_owners(*, project: Project) -> list[str]:
    """The usernames of a project's owners: whom to ask for a role."""
    return list(
        Membership.objects.filter(project=project, role="owner")
        .order_by("user__username")
        .values_list("user__username", flat=True)
    )


# Roles that may change a project's data (upload, audit, annotate); viewers only read.
WRITE_ROLES = ("owner", "annotator")


def can_write(*, user, project: Project) -> bool:  # type: ignore[no-untyped-def]
    return role_of(user=user, project=project) in WRITE_ROLES


def upload_list(*, user) -> QuerySet[Upload]:  # type: ignore[no-untyped-def]
    return Upload.objects.filter(project__in=project_list(user=user)).select_related("project")


def upload_get(*, user, upload_id: int) -> Upload:  # type: ignore[no-untyped-def]
    upload = upload_list(user=user).filter(pk=upload_id).first()
    if upload is None:
        raise Http404("no such upload")
    return upload


def trace_list(*, user, project: Project | None = None) -> QuerySet[Trace]:  # type: ignore[no-untyped-def]
    """Visible traces: only those of finished uploads, so an ingest in progress (or one that
    crashed between batches) never shows half its traces."""
    qs = Trace.objects.filter(
        project__in=project_list(user=user), upload__status=Upload.Status.DONE
    )
    if project is not None:
        qs = qs.filter(project=project)
    return qs


def trace_get(*, user, trace_id: int) -> Trace:  # type: ignore[no-untyped-def]
    trace = trace_list(user=user).select_related("project", "upload").filter(pk=trace_id).first()
    if trace is None:
        raise Http404("no such trace")
    return trace


def event_list(*, trace: Trace) -> QuerySet[Event]:
    return Event.objects.filter(trace=trace).order_by("seq")


STEP_FIELDS = (
    "seq",
    "type",
    "turn",
    "role",
    "name",
    "call_id",
    "status",
    "ts",
    "end_ts",
    "duration_ms",
    "usage",
    "cost_usd",
    "span_id",
    "spans",
)


def event_steps(*, trace: Trace) -> list[dict]:
    """Per event, in order, what a tree of the trace's steps reads, without its content
    (`STEP_FIELDS`): the hot columns, the payload's `ts`, `end_ts`, `duration_ms`, `usage`,
    `cost_usd` and `meta.span_id`, and on the header the OTel span list `meta.otel.spans`."""
    if connection.vendor == "postgresql":
        # One JSON text for the whole trace, decoded by orjson: a row per event through the ORM
        # decodes each JSON value apart with the stdlib, which cost most of the steps tree's time.
        with connection.cursor() as cur:
            cur.execute(
                "SELECT '[' || string_agg(json_build_array(seq, type, turn, role, name, call_id,"
                " status, payload->'ts', payload->'end_ts', payload->'duration_ms',"
                " payload->'usage', payload->'cost_usd', payload #> '{meta,span_id}',"
                " CASE WHEN type = 'trace' THEN payload #> '{meta,otel,spans}' END)::text,"
                f" ',' ORDER BY seq) || ']' FROM {Event._meta.db_table} WHERE trace_id = %s",
                [trace.pk],
            )
            (text,) = cur.fetchone()
        return [dict(zip(STEP_FIELDS, row, strict=True)) for row in orjson.loads(text or "[]")]
    return list(
        event_list(trace=trace)
        .annotate(
            ts=KeyTransform("ts", "payload"),
            end_ts=KeyTransform("end_ts", "payload"),
            duration_ms=KeyTransform("duration_ms", "payload"),
            usage=KeyTransform("usage", "payload"),
            cost_usd=KeyTransform("cost_usd", "payload"),
            span_id=KeyTransform("span_id", KeyTransform("meta", "payload")),
            spans=KeyTransform("spans", KeyTransform("otel", KeyTransform("meta", "payload"))),
        )
        .values(*STEP_FIELDS)
    )


#: Events sent per row by `load_events`: a row per event spent more of a worker's time in
#: psycopg's and this loop's per-row work than in decoding; a row per trace could
#: exceed PostgreSQL's 1 GB text limit. 16 stays under it up to 64 MB per event's text, twice the
#: default line limit (TA_MAX_LINE_BYTES).
EVENTS_PER_ROW = 16


def load_events(trace_ids: Sequence[int]) -> dict[int, list[dict]]:
    """v1 events per trace, in order, decoded with orjson (the JSONField path decodes with the
    slower stdlib). Not scoped: for workers and builders that already hold scoped trace ids."""
    out: dict[int, list[dict]] = {i: [] for i in trace_ids}
    if not trace_ids:
        return out
    table = Event._meta.db_table
    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            # Runs of EVENTS_PER_ROW events as one JSON array text each, joined by the server.
            cur.execute(
                "SELECT trace_id, '[' || string_agg(payload::text, ',' ORDER BY seq) || ']' "
                f"FROM {table} WHERE trace_id = ANY(%s) "
                f"GROUP BY trace_id, seq / {EVENTS_PER_ROW:d} "
                f"ORDER BY trace_id, seq / {EVENTS_PER_ROW:d}",
                [list(trace_ids)],
            )
            # Row by row, not fetchall(): each text is dropped once decoded, instead of every
            # text of the batch living beside its decoded copy (megabytes for a BFCL batch).
            for trace_id, payloads in cur:
                out[trace_id].extend(orjson.loads(payloads))
            return out
        placeholders = ", ".join(["%s"] * len(trace_ids))
        cur.execute(
            f"SELECT trace_id, payload FROM {table} "
            f"WHERE trace_id IN ({placeholders}) ORDER BY trace_id, seq",
            list(trace_ids),
        )
        for trace_id, payload in cur:
            out[trace_id].append(orjson.loads(payload))
    return out


def analyze_if_never_analyzed() -> bool:
    """ANALYZE the trace and event tables if PostgreSQL has never gathered their statistics (a
    new database, the first ingest, autovacuum not round yet): the planner then knows nothing
    of them and reads `load_events`' few traces with a parallel scan of every event — seconds
    per batch, minutes for a large run — instead of the (trace, seq) index. Autovacuum
    keeps them fresh afterwards. Returns whether it analyzed."""
    if connection.vendor != "postgresql":
        return False
    tables = [Event._meta.db_table, Trace._meta.db_table]
    with connection.cursor() as cur:
        cur.execute(
            "SELECT relname FROM pg_stat_user_tables WHERE relname = ANY(%s) "
            "AND last_analyze IS NULL AND last_autoanalyze IS NULL",
            [tables],
        )
        stale = [name for (name,) in cur.fetchall()]
        for name in stale:
            cur.execute(f"ANALYZE {connection.ops.quote_name(name)}")
    return bool(stale)
