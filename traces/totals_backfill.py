"""Filling the duration, tokens and cost of traces stored before those columns existed (or
recomputing them), from their stored events. Used by migration 0016 and by the
`trace_totals` command; takes the model classes so the migration can pass its historical ones.
"""

from __future__ import annotations

from typing import Any

from traces.totals import COLUMNS, TIMING_KEYS, TraceTotals


def totals_backfill(trace_model: Any, event_model: Any, *, batch: int = 500) -> int:
    """Recompute every trace that has an event with a timing, token or cost field; return how
    many traces now carry at least one figure. Events stream in (trace, seq) order, so memory
    holds one batch of trace rows, never the events of many traces."""
    events = (
        event_model.objects.filter(payload__has_any_keys=sorted(TIMING_KEYS))
        .order_by("trace_id", "seq")
        .values_list("trace_id", "payload")
    )
    pending: list[Any] = []
    filled = 0
    current: int | None = None
    totals = TraceTotals()

    def close(trace_id: int | None) -> None:
        nonlocal filled
        if trace_id is None:
            return
        fields = totals.fields()
        if any(v is not None for v in fields.values()):
            filled += 1
        pending.append(trace_model(pk=trace_id, **fields))
        if len(pending) >= batch:
            flush()

    def flush() -> None:
        trace_model.objects.bulk_update(pending, list(COLUMNS), batch_size=batch)
        pending.clear()

    for trace_id, payload in events.iterator(chunk_size=2000):
        if trace_id != current:
            close(current)
            current, totals = trace_id, TraceTotals()
        if isinstance(payload, dict):
            totals.add(payload)
    close(current)
    if pending:
        flush()
    return filled
