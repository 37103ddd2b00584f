"""A trace's duration, tokens and cost, from the optional timing fields of its events.

Pure Python (no database): ingest feeds each accepted event that has any of these fields to a
`TraceTotals` while the file streams past, and the backfill feeds it the stored payloads. What
the trace columns hold (`Trace.started_at`, `duration_ms`, `input_tokens`, `output_tokens`,
`total_tokens`, `cost_usd`):

- **The header wins.** A header's `duration_ms`, `usage` counts and `cost_usd` state the whole
  trace's figures (an importer puts them there when the source gives per-trace totals only, or
  gives totals that per-event figures do not add up to): duration, cost and the token counts
  (as one set, so input and output stay from one source) are each the header's when it states
  them.
- **Else the events add up.** Tokens and cost are the sums over every event that gives them.
  `total_tokens` is an event's own `usage.total_tokens`, else its input plus output tokens.
- **Duration** is the wall-clock span from the earliest `ts` to the latest end (`end_ts`, else
  `ts` + `duration_ms`, else `ts`) — header included — when there are two points in time to
  span; else the sum of the events' `duration_ms`. Model calls can overlap or leave gaps, so
  the span says what a user waited and the sum is only the fallback.
- **Never guessed.** A figure no event gives stays None (shown "—"), never 0.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")
TIMING_KEYS = frozenset({"ts", "end_ts", "duration_ms", "usage", "cost_usd"})
COLUMNS = ("started_at", "duration_ms", "input_tokens", "output_tokens", "total_tokens", "cost_usd")


def parse_ts(value: Any) -> datetime | None:
    """An RFC 3339 string (as v1 validates it) as an aware datetime; None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.upper().replace(" ", "T"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _add(total: float | int | None, value: float | int | None) -> Any:
    if value is None:
        return total
    return value if total is None else total + value


class TraceTotals:
    """Accumulates one trace's figures event by event; `fields()` gives the Trace columns."""

    __slots__ = ("first", "last", "points", "durations", "tokens", "cost", "header")

    def __init__(self) -> None:
        self.first: datetime | None = None
        self.last: datetime | None = None
        self.points = 0  # timestamps and ends seen: two make a span
        self.durations: float | None = None
        self.tokens: dict[str, int] = {}
        self.cost: float | None = None
        self.header: dict[str, Any] = {}

    def add(self, event: dict) -> None:
        if TIMING_KEYS.isdisjoint(event):
            return
        start = parse_ts(event.get("ts"))
        end = parse_ts(event.get("end_ts"))
        duration = _number(event.get("duration_ms"))
        if end is None and start is not None and duration is not None:
            end = start + timedelta(milliseconds=duration)
        for point in (start, end):
            if point is None:
                continue
            self.points += 1
            if self.first is None or point < self.first:
                self.first = point
            if self.last is None or point > self.last:
                self.last = point
        usage = event.get("usage")
        counts = {k: _count(usage.get(k)) for k in USAGE_KEYS} if isinstance(usage, dict) else {}
        if counts.get("total_tokens") is None and (
            counts.get("input_tokens") is not None or counts.get("output_tokens") is not None
        ):
            counts["total_tokens"] = (counts.get("input_tokens") or 0) + (
                counts.get("output_tokens") or 0
            )
        cost = _number(event.get("cost_usd"))
        if event.get("type") == "trace":
            self.header = {
                "started_at": start,
                "duration_ms": duration,
                "cost_usd": cost,
                **{k: v for k, v in counts.items() if v is not None},
            }
            return
        self.durations = _add(self.durations, duration)
        self.cost = _add(self.cost, cost)
        for key, value in counts.items():
            if value is not None:
                self.tokens[key] = self.tokens.get(key, 0) + value

    def fields(self) -> dict[str, Any]:
        """The Trace columns (see the module docstring); None where nothing gives a figure."""
        head = self.header
        duration = head.get("duration_ms")
        if duration is None and self.points >= 2 and self.first and self.last:
            duration = (self.last - self.first).total_seconds() * 1000
        if duration is None:
            duration = self.durations
        out: dict[str, Any] = {
            "started_at": head.get("started_at") or self.first,
            "duration_ms": duration,
            "cost_usd": head["cost_usd"] if head.get("cost_usd") is not None else self.cost,
        }
        header_tokens = any(k in head for k in USAGE_KEYS)
        for key in USAGE_KEYS:
            out[key] = head.get(key) if header_tokens else self.tokens.get(key)
        return out


def totals_of(events: list[dict]) -> dict[str, Any]:
    """The Trace columns for a whole trace's events (any order)."""
    totals = TraceTotals()
    for event in events:
        totals.add(event)
    return totals.fields()
