"""Grouping validated events into traces, and the trace-level rules of SPEC §3.

Pure Python (no database): the ingest service feeds it events line by line and stores what
`finish()` accepts. A trace with any bad line is rejected whole; other traces are unaffected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from traces.reader import LineError

# Finds a trace id in a line that is not valid JSON, so its trace can still be rejected whole.
_TRACE_ID_IN_RAW = re.compile(rb'"trace_id"\s*:\s*"((?:[^"\\]|\\.){1,255})"')

# Hot-column widths (traces.models.Event); the payload always keeps the full value.
_WIDTH = {"type": 40, "role": 20, "name": 200, "call_id": 200, "status": 20}


def trace_id_from_raw(line: bytes) -> str | None:
    m = _TRACE_ID_IN_RAW.search(line[:65536])
    if not m:
        return None
    return m.group(1).decode("utf-8", errors="replace")


@dataclass(slots=True)
class Row:
    """One event ready to store: hot columns and the payload as JSON bytes."""

    seq: int | None
    type: str
    turn: int | None
    role: str
    name: str
    call_id: str
    status: str
    line: int
    payload: bytes


@dataclass(slots=True)
class PendingTrace:
    trace_id: str
    first_line: int
    rows: list[Row] = field(default_factory=list)
    header: dict | None = None
    rejected: bool = False


def _text(event: dict, key: str) -> str:
    value = event.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        value = str(value)
    return value[: _WIDTH[key]]


class Collector:
    """Accumulates events per trace in first-seen order."""

    def __init__(self, *, max_events_per_trace: int, max_reported_errors: int) -> None:
        self.max_events = max_events_per_trace
        self.max_reported = max_reported_errors
        self.traces: dict[str, PendingTrace] = {}
        self.errors: list[LineError] = []
        self.error_count = 0
        self.warnings: list[LineError] = []
        self.events_seen = 0

    # -- feeding ------------------------------------------------------------------------
    def error(self, line: int, trace_id: str | None, path: str, message: str) -> None:
        """Record a bad line; its trace (when known) is rejected whole."""
        self.error_count += 1
        if len(self.errors) < self.max_reported:
            self.errors.append(LineError(line, trace_id, path, message))
        if trace_id is not None:
            pending = self.traces.get(trace_id)
            if pending is None:
                pending = self.traces[trace_id] = PendingTrace(trace_id, line)
            self._reject(pending)

    def warn(self, line: int, trace_id: str | None, message: str) -> None:
        if len(self.warnings) < self.max_reported:
            self.warnings.append(LineError(line, trace_id, "$", message))

    def add(self, line: int, event: dict, payload: bytes) -> None:
        """Add one event that passed `validate_event`."""
        self.events_seen += 1
        trace_id = event["trace_id"]
        pending = self.traces.get(trace_id)
        if pending is None:
            pending = self.traces[trace_id] = PendingTrace(trace_id, line)
        if pending.rejected:
            return
        if len(pending.rows) >= self.max_events:
            self.error(
                line,
                trace_id,
                "$",
                f"trace has more than {self.max_events} events (TA_MAX_EVENTS_PER_TRACE)",
            )
            return
        etype = event["type"]
        if etype == "trace":
            if pending.header is not None:
                self.error(line, trace_id, "$.type", "a second trace header for this trace; "
                           "expected exactly one event of type \"trace\"")
                return
            pending.header = event
        turn = event.get("turn")
        pending.rows.append(
            Row(
                seq=event.get("seq"),
                type=etype[:40],
                turn=turn if type(turn) is int else None,
                role=_text(event, "role") if etype == "message" else "",
                name=_text(event, "name") if etype == "tool_call" else "",
                call_id=_text(event, "call_id"),
                status=_text(event, "status") if etype == "tool_result" else "",
                line=line,
                payload=payload,
            )
        )

    def _reject(self, pending: PendingTrace) -> None:
        pending.rejected = True
        pending.rows = []  # free memory now; the raw file keeps everything
        pending.header = None

    # -- finishing ----------------------------------------------------------------------
    def finish(self) -> tuple[list[PendingTrace], list[str]]:
        """Apply the ordering rules; return (accepted traces, rejected trace ids)."""
        accepted: list[PendingTrace] = []
        rejected: list[str] = []
        for pending in self.traces.values():
            if not pending.rejected:
                self._order(pending)
            if pending.rejected:
                rejected.append(pending.trace_id)
            else:
                accepted.append(pending)
        return accepted, rejected

    def _order(self, pending: PendingTrace) -> None:
        rows = pending.rows
        with_seq = [r for r in rows if r.seq is not None]
        if with_seq and len(with_seq) != len(rows):
            missing = next(r for r in rows if r.seq is None)
            self.error(missing.line, pending.trace_id, "$.seq",
                       "seq is given on some events of this trace but not on this one; "
                       "give it on all events of a trace or on none")
            return
        if with_seq:
            rows.sort(key=lambda r: r.seq)  # type: ignore[arg-type,return-value]
            for prev, cur in zip(rows, rows[1:], strict=False):
                if prev.seq == cur.seq:
                    self.error(cur.line, pending.trace_id, "$.seq",
                               f"seq {cur.seq} is used twice in this trace (also on line {prev.line})")
                    return
        else:
            for i, r in enumerate(rows):
                r.seq = i
        if pending.header is not None and rows[0].type != "trace":
            head = next(r for r in rows if r.type == "trace")
            self.error(head.line, pending.trace_id, "$.type",
                       "the trace header (type \"trace\") must be the first event of its trace")
