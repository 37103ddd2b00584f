"""Writing accepted traces: COPY on PostgreSQL, executemany on SQLite, in batches, each batch in
its own transaction.

Traces of an upload stay invisible until the upload is marked done (selectors filter on it), so a
crash between batches never shows half an upload; a retry deletes the partial rows first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.db import IntegrityError, connection, transaction

from traces.collect import PendingTrace
from traces.models import Event, Trace, Upload

_EVENT_COLUMNS = ("trace_id", "seq", "type", "turn", "role", "name", "call_id", "status", "line", "payload")
_NULL = b"\\N"


def _clip(value: object, width: int) -> str:
    if value is None:
        return ""
    return (value if isinstance(value, str) else str(value))[:width]


def trace_fields(header: dict | None) -> dict:
    """The indexed columns of Trace, from a v1 header (missing parts become blank)."""
    h = header or {}
    task = h.get("task") if isinstance(h.get("task"), dict) else {}
    outcome = h.get("outcome") if isinstance(h.get("outcome"), dict) else {}
    reward = outcome.get("reward")
    success = outcome.get("success")
    return {
        "agent": _clip(h.get("agent"), 200),
        "model": _clip(h.get("model"), 200),
        "benchmark": _clip(task.get("benchmark"), 200),
        "category": _clip(task.get("category"), 200),
        "task_id": _clip(task.get("id"), 255),
        "outcome_success": success if isinstance(success, bool) else None,
        "outcome_reward": float(reward)
        if isinstance(reward, (int, float)) and not isinstance(reward, bool)
        else None,
        "header": h,
    }


def existing_trace_ids(project_id: int, ids: list[str]) -> dict[str, int]:
    """Trace ids already stored in the project, with the upload that stored them."""
    found: dict[str, int] = {}
    for start in range(0, len(ids), 2000):
        chunk = ids[start : start + 2000]
        found.update(
            Trace.objects.filter(project_id=project_id, external_id__in=chunk).values_list(
                "external_id", "upload_id"
            )
        )
    return found


def _esc(value: str) -> bytes:
    return (
        value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    ).encode("utf-8")


def _copy_events(batch: list[tuple[int, PendingTrace]]) -> None:
    buf = bytearray()
    for pk, pending in batch:
        pk_b = str(pk).encode()
        for r in pending.rows:
            payload = r.payload
            if b"\\" in payload or b"\t" in payload or b"\r" in payload:
                payload = payload.replace(b"\\", b"\\\\").replace(b"\t", b"\\t").replace(b"\r", b"\\r")
            buf += b"\t".join(
                (
                    pk_b,
                    str(r.seq).encode(),
                    _esc(r.type),
                    _NULL if r.turn is None else str(r.turn).encode(),
                    _esc(r.role),
                    _esc(r.name),
                    _esc(r.call_id),
                    _esc(r.status),
                    str(r.line).encode(),
                    payload,
                )
            )
            buf += b"\n"
    table = Event._meta.db_table
    with connection.cursor() as cur:
        with cur.copy(f"COPY {table} ({', '.join(_EVENT_COLUMNS)}) FROM STDIN") as copy:
            # Write in slices so psycopg can stream without one giant buffer copy.
            view = memoryview(buf)
            for start in range(0, len(view), 1 << 20):
                copy.write(view[start : start + (1 << 20)])


def _insert_events(batch: list[tuple[int, PendingTrace]]) -> None:
    table = Event._meta.db_table
    sql = (
        f"INSERT INTO {table} ({', '.join(_EVENT_COLUMNS)}) "
        f"VALUES ({', '.join(['%s'] * len(_EVENT_COLUMNS))})"
    )
    rows = [
        (pk, r.seq, r.type, r.turn, r.role, r.name, r.call_id, r.status, r.line,
         r.payload.decode("utf-8"))
        for pk, pending in batch
        for r in pending.rows
    ]
    with connection.cursor() as cur:
        cur.executemany(sql, rows)


def _store_batch(upload: Upload, batch: list[PendingTrace]) -> None:
    with transaction.atomic():
        traces = Trace.objects.bulk_create(
            [
                Trace(
                    project_id=upload.project_id,
                    upload=upload,
                    external_id=p.trace_id,
                    event_count=len(p.rows),
                    **trace_fields(p.header),
                )
                for p in batch
            ]
        )
        pairs = [(t.pk, p) for t, p in zip(traces, batch, strict=True)]
        if connection.vendor == "postgresql":
            _copy_events(pairs)
        else:
            _insert_events(pairs)


def store_traces(
    upload: Upload,
    accepted: list[PendingTrace],
    *,
    batch_events: int,
    on_batch: Callable[[int], None],
    on_conflict: Callable[[PendingTrace, int | None], None],
) -> list[PendingTrace]:
    """Store accepted traces in batches of about `batch_events` events; returns those stored.

    A trace whose id another upload stored meanwhile (a race the pre-check cannot close) is
    reported through `on_conflict` and skipped; the rest of its batch is stored.
    """
    stored: list[PendingTrace] = []
    for batch in _batches(accepted, batch_events):
        try:
            _store_batch(upload, batch)
        except IntegrityError:
            taken = existing_trace_ids(upload.project_id, [p.trace_id for p in batch])
            for p in batch:
                if p.trace_id in taken:
                    on_conflict(p, taken[p.trace_id])
            batch = [p for p in batch if p.trace_id not in taken]
            if batch:
                _store_batch(upload, batch)
        stored.extend(batch)
        on_batch(sum(len(p.rows) for p in batch))
    return stored


def _batches(items: Iterable[PendingTrace], size: int) -> Iterable[list[PendingTrace]]:
    batch: list[PendingTrace] = []
    count = 0
    for item in items:
        batch.append(item)
        count += len(item.rows)
        if count >= size:
            yield batch
            batch, count = [], 0
    if batch:
        yield batch
