"""Timing, token and cost fields of v1 events, from what foreign formats call them.

v1 names (SPEC §3, optional on any event): `ts` and `end_ts` (RFC 3339), `duration_ms`,
`usage` {`input_tokens`, `output_tokens`, `total_tokens`} and `cost_usd`. A value the source
gives in a shape v1 cannot take is kept in the event's `meta` under its source name and flagged;
a value the source does not give is left out, never filled in.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ._common import Trace

# Source token-count names → v1 names (OpenAI chat completions, Anthropic / GenAI, Langfuse).
TOKEN_NAMES = {
    "prompt_tokens": "input_tokens",
    "input_tokens": "input_tokens",
    "input": "input_tokens",
    "completion_tokens": "output_tokens",
    "output_tokens": "output_tokens",
    "output": "output_tokens",
    "total_tokens": "total_tokens",
    "total": "total_tokens",
}
MAX_COUNT = 2**31 - 1
# Milliseconds (30,000 years) or dollars: no real trace comes near it.
MAX_AMOUNT = 1e15


def count(value: Any) -> int | None:
    """A token count: a non-negative integer (an integral float such as 12.0 too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and 0 <= value <= MAX_COUNT else None


def amount(value: Any) -> float | int | None:
    """A duration or a cost: a non-negative finite number, at most MAX_AMOUNT (beyond it, or
    infinite, a value is a broken record, and JSON could not store every such number)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return value if 0 <= value <= MAX_AMOUNT else None


def usage_of(raw: Any) -> dict | None:
    """v1 `usage` from a source usage object (OpenAI `prompt_tokens`/`completion_tokens`,
    `input_tokens`/`output_tokens`, Langfuse `input`/`output`/`total`); None when it gives no
    usable count. Keys with no v1 name (`prompt_tokens_details`, …) are kept beside them."""
    if not isinstance(raw, dict):
        return None
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in raw.items():
        name = TOKEN_NAMES.get(key)
        n = count(value) if name else None
        if n is not None and name is not None:
            out[name] = n
        elif value is not None:
            extra[key] = value
    if not out:
        return None
    return {**{k: v for k, v in extra.items() if k not in TOKEN_NAMES}, **out}


def rfc3339(value: Any) -> tuple[str | None, bool]:
    """(an RFC 3339 string, whether its UTC offset was assumed) for an ISO 8601 date-time.
    A time without an offset (τ²-bench writes local time without one) is read as UTC: the
    durations between such times are right whatever the zone, the wall-clock time may not be."""
    if not isinstance(value, str) or not value:
        return None, False
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        return None, False
    assumed = parsed.tzinfo is None
    if assumed:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.isoformat().replace("+00:00", "Z"), assumed


def from_unix_nano(nanos: Any) -> str | None:
    """An RFC 3339 UTC string, to the nanosecond, for OTLP's `*TimeUnixNano`; None for 0 and
    for a time no calendar date holds (past the year 9999)."""
    if not isinstance(nanos, int) or nanos <= 0:
        return None
    seconds, rest = divmod(nanos, 1_000_000_000)
    try:
        stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return None
    return f"{stamp}.{rest:09d}Z"


def put_timing(
    trace: Trace,
    event: dict,
    *,
    ts: Any = None,
    end_ts: Any = None,
    duration_ms: Any = None,
    usage: Any = None,
    cost_usd: Any = None,
    source: dict[str, str] | None = None,
) -> None:
    """Set the v1 timing fields the source gives on `event`. `source` names each field's source
    key, for keeping an unusable value in `meta` under that name."""
    names = source or {}
    for field, raw in (("ts", ts), ("end_ts", end_ts)):
        if raw is None:
            continue
        if isinstance(raw, str) and raw and raw[0].isdigit():
            text, assumed = rfc3339(raw)
        else:
            text, assumed = None, False
        if text is None:
            trace.flag(event, "timestamp_unreadable", names.get(field, field), raw)
            continue
        event[field] = text
        if assumed:
            event.setdefault("meta", {})["ts_offset_assumed"] = "UTC"
            trace.report.note_flag("timestamp_without_offset_read_as_utc")
    for field, raw in (("duration_ms", duration_ms), ("cost_usd", cost_usd)):
        if raw is None:
            continue
        value = amount(raw)
        if value is None:
            trace.flag(event, f"{field}_unusable", names.get(field, field), raw)
        else:
            event[field] = value
    if usage is not None:
        mapped = usage_of(usage)
        if mapped is None:
            trace.flag(event, "usage_unusable", names.get("usage", "usage"), usage)
        else:
            event["usage"] = mapped
