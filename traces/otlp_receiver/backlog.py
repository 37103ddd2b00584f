"""A project's backlog in the span buffer: how many spans wait for their trace to complete, and
their stored bytes. The receiver refuses a request that would take either past its limit
(TA_OTLP_MAX_PENDING_SPANS, TA_OTLP_MAX_PENDING_BYTES), reading one row (`backlog`); the
statement that buffers spans adds what it stored (`store.spans_insert`), completion subtracts
what it imports or marks late (`backlog_release`), each in its own transaction, and the sweep
counts the buffer again (`backlog_recount_all`), so a count that drifted (a span row edited by
hand) is right again within a sweep.

A span's bytes are its resource, scope and span as JSON text (`OtlpSpan.size`): each row
keeps its own copy of the request's resource and scope, and the figure does not depend on how
the database compresses them."""

from __future__ import annotations

from typing import Any

from django.db import connection as default_connection

from traces.otlp_receiver.models import OtlpBacklog, OtlpSpan


def backlog(project_id: int) -> tuple[int, int]:
    """(spans, bytes) waiting in the project's buffer."""
    row = OtlpBacklog.objects.filter(project_id=project_id).values_list("spans", "bytes").first()
    return row or (0, 0)


def backlog_release(project_id: int, spans: int, size: int) -> None:
    """Spans left the buffer (imported, or late): subtract them, never below zero."""
    if not spans:
        return
    table = OtlpBacklog._meta.db_table
    most = "GREATEST" if default_connection.vendor == "postgresql" else "MAX"
    with default_connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET spans = {most}(spans - %s, 0), bytes = {most}(bytes - %s, 0)"
            " WHERE project_id = %s",
            [spans, size, project_id],
        )


def backlog_add_sql() -> str:
    """The upsert that adds a request's stored spans (a CTE `ins` with a `size` column) to its
    project's backlog: `%b` is the project id."""
    table = OtlpBacklog._meta.db_table
    return (
        f"INSERT INTO {table} (project_id, spans, bytes)"
        " SELECT %b, count(*), coalesce(sum(size), 0) FROM ins"
        " ON CONFLICT (project_id) DO UPDATE"
        f" SET spans = {table}.spans + excluded.spans, bytes = {table}.bytes + excluded.bytes"
    )


def backlog_recount_all(
    connection: Any = default_connection, *, project_id: int | None = None
) -> None:
    """Count every project's buffered spans again (one project's, with `project_id`: the
    SQLite path after each insert), in one statement a side; projects with none wait for
    nothing."""
    spans, table = OtlpSpan._meta.db_table, OtlpBacklog._meta.db_table
    only, params = ("project_id = %s AND ", [project_id]) if project_id is not None else ("", [])
    with connection.cursor() as cursor:
        # Rows are written only where the count changed: a sweep of a quiet buffer writes
        # nothing.
        cursor.execute(
            f"UPDATE {table} SET spans = 0, bytes = 0 WHERE {only}(spans <> 0 OR bytes <> 0)"
            f" AND project_id NOT IN (SELECT project_id FROM {spans} WHERE state = 'buffered')",
            params,
        )
        cursor.execute(
            f"INSERT INTO {table} (project_id, spans, bytes)"
            " SELECT project_id, count(*), coalesce(sum(size), 0)"
            f" FROM {spans} WHERE {only}state = 'buffered' GROUP BY project_id"
            " ON CONFLICT (project_id) DO UPDATE"
            " SET spans = excluded.spans, bytes = excluded.bytes"
            f" WHERE {table}.spans <> excluded.spans OR {table}.bytes <> excluded.bytes",
            params,
        )


def receiver_status(project_id: int) -> dict:
    """What the project page tells an owner about live spans: what waits, the limits, and
    the receiver's latest upload."""
    from django.conf import settings

    from traces.models import Upload

    spans, size = backlog(project_id)
    latest = (
        Upload.objects.filter(project_id=project_id, source=Upload.Source.OTLP)
        .order_by("-created_at", "-id")
        .only("pk", "filename", "status", "created_at", "traces_accepted")
        .first()
    )
    return {
        "spans": spans,
        "spans_text": f"{spans:,}",
        "bytes": size,
        "max_spans": f"{settings.TA_OTLP_MAX_PENDING_SPANS:,}",
        "max_bytes": settings.TA_OTLP_MAX_PENDING_BYTES,
        "full": spans >= settings.TA_OTLP_MAX_PENDING_SPANS
        or size >= settings.TA_OTLP_MAX_PENDING_BYTES,
        "latest": latest,
        "grace": settings.TA_OTLP_GRACE_SECONDS,
        "quiet": settings.TA_OTLP_QUIET_SECONDS,
    }
