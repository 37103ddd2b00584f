"""The timing, token and cost fields of v1 events read defensively, and their display text.

v1 events may carry `ts` (start, RFC 3339), `end_ts` (RFC 3339), `duration_ms`, `usage`
(`input_tokens`, `output_tokens`, `total_tokens`) and `cost_usd`; all are optional. What a
producer wrote is not trusted: a duration that is negative, not a finite number, or longer than
`ABSURD_MS` is unknown, and so is an end before its start. Unknown is shown as unknown — the
page draws no bar it cannot place from the recorded values.

Times are milliseconds since the Unix epoch (floats), so OTel spans' nanosecond clocks and
events' RFC 3339 stamps share one axis.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# A step longer than a week is a broken clock (or a unit mistake), not a step.
ABSURD_MS = 7 * 24 * 3600 * 1000.0
# The v1 schema's `ts` pattern, with the parts kept apart; fractions finer than microseconds
# (OTel clocks give nanoseconds) are cut, which `datetime` cannot hold anyway.
_RFC3339 = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt ]([0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]+))?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def epoch_ms(value: Any) -> float | None:
    """An RFC 3339 time as milliseconds since the epoch; None for anything else (a time without
    a zone included: it names no instant)."""
    if not isinstance(value, str):
        return None
    try:  # the common case, in C (it also reads other ISO 8601 forms of an instant)
        stamp = datetime.fromisoformat(value)
    except ValueError:
        pass
    else:
        return stamp.timestamp() * 1000.0 if stamp.tzinfo is not None else None
    m = _RFC3339.fullmatch(value)  # nanoseconds, which datetime does not read
    if m is None:
        return None
    date, clock, fraction, zone = m.groups()
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        stamp = datetime.fromisoformat(f"{date}T{clock}{zone}")
    except ValueError:  # a well-formed but impossible date, such as month 13
        return None
    return stamp.timestamp() * 1000.0 + (float(f"0.{fraction}") * 1000.0 if fraction else 0.0)


def nonneg(value: Any) -> float | None:
    """A finite number ≥ 0 (not a bool), else None."""
    kind = type(value)
    if kind is int:
        return float(value) if value >= 0 else None
    if kind is float:
        return value if 0 <= value < math.inf else None  # NaN fails both comparisons
    return None


def tokens(value: Any) -> int | None:
    """A token count: an integer ≥ 0 (not a bool), else None."""
    return value if type(value) is int and value >= 0 else None


@dataclass(slots=True, eq=False)  # eq=False: identity hash, so a shared instance can be a default
class Timing:
    """When a step started and how long it took, as far as its recorded fields tell.

    ``recorded`` says the step carried timing fields at all; ``bad`` that some were unusable
    (negative, absurd, an end before the start), so the page says "unknown" rather than "—"."""

    start: float | None = None
    duration: float | None = None
    recorded: bool = False
    bad: bool = False


def event_timing(ts: Any, end_ts: Any, duration_ms: Any) -> Timing:
    """An event's timing from its `ts`, `end_ts` and `duration_ms`: `duration_ms` when usable,
    else `end_ts - ts`. A step with only an end is a point in time at its end."""
    start = epoch_ms(ts) if ts is not None else None
    end = epoch_ms(end_ts) if end_ts is not None else None
    bad = (ts is not None and start is None) or (end_ts is not None and end is None)
    duration = None
    if duration_ms is not None:
        duration = nonneg(duration_ms)
        if duration is None or duration > ABSURD_MS:
            duration, bad = None, True
    if duration is None and start is not None and end is not None:
        if 0 <= end - start <= ABSURD_MS:
            duration = end - start
        else:
            bad = True
    if start is None and duration is None:
        start = end
    recorded = ts is not None or end_ts is not None or duration_ms is not None
    return Timing(start, duration, recorded, bad)


def span_timing(start_ns: Any, end_ns: Any) -> Timing:
    """An OTel span's timing from its start and end (Unix nanoseconds; 0 means not set). The
    difference is taken in integers: a float holds today's nanosecond clock only to ~256 ns."""
    start = start_ns if type(start_ns) is int and start_ns > 0 else None
    end = end_ns if type(end_ns) is int and end_ns > 0 else None
    duration = None
    bad = False
    if start is not None and end is not None:
        if 0 <= end - start <= ABSURD_MS * 1e6:
            duration = (end - start) / 1e6
        else:
            bad = True
    recorded = start is not None or end is not None
    return Timing(start / 1e6 if start is not None else None, duration, recorded, bad)


@dataclass(slots=True, eq=False)
class Usage:
    """Tokens and cost of a step (or of a step and everything under it)."""

    input: int | None = None
    output: int | None = None
    total: int | None = None
    cost: float | None = None

    @classmethod
    def of(cls, usage: Any, cost_usd: Any) -> Usage:
        cost = nonneg(cost_usd) if cost_usd is not None else None
        if type(usage) is not dict:
            return cls(cost=cost)
        i = tokens(usage.get("input_tokens"))
        o = tokens(usage.get("output_tokens"))
        t = tokens(usage.get("total_tokens"))
        if t is None and (i is not None or o is not None):
            t = (i or 0) + (o or 0)
        return cls(i, o, t, cost)

    def add(self, other: Usage) -> None:
        self.input = _plus(self.input, other.input)
        self.output = _plus(self.output, other.output)
        self.total = _plus(self.total, other.total)
        self.cost = _plus(self.cost, other.cost)

    @property
    def any(self) -> bool:
        return self.total is not None or self.cost is not None


def _plus(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else a + b


def duration_text(ms: float | None) -> str:
    """A duration for people: 0.42 ms, 12 ms, 1.25 s, 2 min 05 s, 1 h 02 min."""
    if ms is None:
        return ""
    if ms < 10:
        return f"{ms:.2f} ms" if ms < 1 else f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    s = ms / 1000
    if s < 60:
        return f"{s:.2f} s" if s < 10 else f"{s:.1f} s"
    minutes, sec = divmod(round(s), 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def cost_text(usd: float | None) -> str:
    if usd is None:
        return ""
    if usd == 0:
        return "$0"
    return f"${usd:.4f}" if usd < 0.01 else f"${usd:,.2f}" if usd >= 1 else f"${usd:.3f}"


def count_text(n: int | None) -> str:
    return "" if n is None else f"{n:,}"


def tokens_text(u: Usage) -> str:
    """Tokens in and out ("1,200 / 85", "?" for a side not recorded), else the total alone."""
    if u.input is not None or u.output is not None:
        return f"{count_text(u.input) or '?'} / {count_text(u.output) or '?'}"
    return count_text(u.total)
