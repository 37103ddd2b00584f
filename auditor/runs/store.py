"""Writing a batch of audit results. On PostgreSQL the rows go in with one COPY: Django's
multi-row INSERT quotes every jsonb value client-side in Python (psycopg's array dumper), which
cost a run about as much as the four policies themselves (issue 17, measured in bench/audit.py).
The JSON is encoded with orjson; jsonb stores the same value whichever encoder wrote the text.

COPY has no ON CONFLICT: a redelivered chunk racing its original can hit the (run, trace,
policy) constraint, so the COPY runs in a savepoint and, on that conflict only, the batch is
written again the idempotent way (INSERT … ON CONFLICT DO NOTHING) — rare, and still correct.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from auditor.runs.models import DECISION_FIELDS, AuditResult
from auditor.runs.trajectory import split_trajectory

#: The columns a result row is written with, in COPY order.
COLUMNS = (
    "run_id",
    "trace_id",
    "policy",
    *DECISION_FIELDS,
    "guarded_trajectory",
    "guarded_from",
    "created_at",
)
_JSON_COLUMNS = frozenset({"record", "guarded_trajectory"})


def result_row(
    run_id: int, trace_id: int, name: str, d: dict[str, Any], events: Sequence[Any]
) -> dict[str, Any]:
    """One policy's `PolicyResult.to_dict()` as the values of a result row (no created_at).
    ``events``: the trace's stored event payloads in order (`traces.selectors.load_events`):
    the guarded trajectory is stored as its suffix after their common prefix."""
    start, suffix = split_trajectory(events, d["guarded_trajectory"])
    return {
        "run_id": run_id,
        "trace_id": trace_id,
        "policy": name,
        "guarded_trajectory": suffix,
        "guarded_from": start,
        **{f: d[f] for f in DECISION_FIELDS},
    }


def store_results(rows: Sequence[dict[str, Any]]) -> None:
    """Insert the result rows; rows already stored for (run, trace, policy) are kept as they
    are. Call inside the batch's transaction (the items are marked done in the same one)."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        _insert_ignoring_conflicts(rows)
        return
    try:
        with transaction.atomic():  # a savepoint: the conflict below must not end the batch
            _copy(rows)
    except IntegrityError:
        _insert_ignoring_conflicts(rows)


def _copy(rows: Sequence[dict[str, Any]]) -> None:
    now = timezone.now()
    table = connection.ops.quote_name(AuditResult._meta.db_table)
    cols = ", ".join(connection.ops.quote_name(c) for c in COLUMNS)
    # The raw psycopg cursor (Django's has no COPY): its errors are mapped to Django's by hand,
    # so a conflict arrives as the IntegrityError store_results handles.
    with connection.cursor() as cur, connection.wrap_database_errors:
        with cur.cursor.copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([_value(c, row, now) for c in COLUMNS])


def _value(column: str, row: dict[str, Any], now: Any) -> Any:
    if column == "created_at":
        return now
    value = row[column]
    if column in _JSON_COLUMNS:
        # SQL NULL for a missing trajectory, as the JSONField stores None (not JSON null).
        if value is None:
            return None
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    return value


def _insert_ignoring_conflicts(rows: Sequence[dict[str, Any]]) -> None:
    AuditResult.objects.bulk_create(
        [AuditResult(**row) for row in rows], ignore_conflicts=True, batch_size=500
    )
