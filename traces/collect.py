"""The trace-level rules of SPEC §3, applied line by line while the file streams past.

Pure Python (no database). The collector keeps a small `TraceState` per trace — never the
events themselves — so memory does not grow with the file. For each valid event it decides at
once whether the event can be written; rules that can only be judged at the end (the header
must be the first event) are checked in `finish()`. A trace with any bad line is rejected whole;
rows it already wrote are deleted by the store before the upload becomes visible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from traces.reader import LineError
from traces.totals import TraceTotals

# Finds a trace id in a line that is not valid JSON, so its trace can still be rejected whole.
_TRACE_ID_IN_RAW = re.compile(rb'"trace_id"\s*:\s*"((?:[^"\\]|\\.){1,255})"')

# The fields besides `ts` that give a trace a duration, tokens or cost (traces.totals).
_NO_TIMING = frozenset({"end_ts", "duration_ms", "usage", "cost_usd"})

# Hot-column widths (traces.models.Event); the payload always keeps the full value.
_WIDTH = {"type": 40, "role": 20, "name": 200, "call_id": 200, "status": 20}


def trace_id_from_raw(line: bytes) -> str | None:
    m = _TRACE_ID_IN_RAW.search(line[:65536])
    if not m:
        return None
    return m.group(1).decode("utf-8", errors="replace")


@dataclass(slots=True, eq=False)
class TraceState:
    trace_id: str
    first_line: int
    pk: int | None = None  # the Trace row's id, reserved when the first event is written
    row_written: bool = False  # the Trace row itself exists (rows for it may need deleting)
    count: int = 0
    explicit_seq: bool | None = None  # None until the first event says
    seqs: set[int] | None = None
    min_seq: int | None = None
    header: dict | None = None
    header_seq: int | None = None
    header_line: int = 0
    header_late: bool = False  # the header arrived after the Trace row was written
    rejected: bool = False
    totals: TraceTotals | None = None  # created by the first event with timing, tokens or cost
    totals_stored_at: int = -1  # `count` when the Trace row got its totals (-1: never)


# (state, seq, type, turn, role, name, call_id, status, line, payload)
Row = tuple[TraceState, int, str, "int | None", str, str, str, str, int, bytes]


def _text(event: dict, key: str) -> str:
    value = event.get(key)
    if value is None:
        return ""
    if value.__class__ is not str:
        value = str(value)
    return value[: _WIDTH[key]]


class Collector:
    """Decides, event by event, what is written; records every error with its line."""

    def __init__(self, *, max_events_per_trace: int, max_reported_errors: int) -> None:
        self.max_events = max_events_per_trace
        self.max_reported = max_reported_errors
        self.traces: dict[str, TraceState] = {}
        self.errors: list[LineError] = []
        self.error_count = 0
        self.warnings: list[LineError] = []

    def state(self, trace_id: str, line: int) -> TraceState:
        st = self.traces.get(trace_id)
        if st is None:
            st = self.traces[trace_id] = TraceState(trace_id, line)
        return st

    # -- errors -------------------------------------------------------------------------
    def error(self, line: int, trace_id: str | None, path: str, message: str) -> None:
        """Record a bad line; its trace (when known) is rejected whole."""
        self._report(line, trace_id, path, message)
        if trace_id is not None:
            self.state(trace_id, line).rejected = True

    def _report(self, line: int, trace_id: str | None, path: str, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < self.max_reported:
            self.errors.append(LineError(line, trace_id, path, message))

    def warn(self, line: int, trace_id: str | None, message: str) -> None:
        if len(self.warnings) < self.max_reported:
            self.warnings.append(LineError(line, trace_id, "$", message))

    # -- events -------------------------------------------------------------------------
    def add(self, line: int, event: dict, payload: bytes) -> Row | None:
        """The row to write for an event that passed `validate_event`, or None when its trace is
        (now) rejected."""
        trace_id = event["trace_id"]
        st = self.traces.get(trace_id)
        if st is None:
            st = self.traces[trace_id] = TraceState(trace_id, line)
        if st.rejected:
            return None
        if st.count >= self.max_events:
            self.error(
                line,
                trace_id,
                "$",
                f"trace has more than {self.max_events} events (TA_MAX_EVENTS_PER_TRACE)",
            )
            return None
        seq = event.get("seq")
        if st.explicit_seq is None:
            st.explicit_seq = seq is not None
            if seq is not None:
                st.seqs = set()
        if (seq is not None) != st.explicit_seq:
            self.error(
                line,
                trace_id,
                "$.seq",
                "seq is given on some events of this trace but not on others; "
                "give it on all events of a trace or on none",
            )
            return None
        if seq is None:
            seq = st.count
        else:
            seqs = st.seqs
            assert seqs is not None
            if seq in seqs:
                self.error(line, trace_id, "$.seq", f"seq {seq} is used twice in this trace")
                return None
            seqs.add(seq)
            if st.min_seq is None or seq < st.min_seq:
                st.min_seq = seq
        etype = event["type"]
        if etype == "trace":
            if st.header is not None:
                self.error(
                    line,
                    trace_id,
                    "$.type",
                    "a second trace header for this trace; "
                    'expected exactly one event of type "trace"',
                )
                return None
            st.header, st.header_seq, st.header_line = event, seq, line
            st.header_late = st.row_written
        st.count += 1
        if "ts" in event or not _NO_TIMING.isdisjoint(event):
            if st.totals is None:
                st.totals = TraceTotals()
            st.totals.add(event)
        turn = event.get("turn")
        if etype == "message":
            role, name, status = _text(event, "role"), "", ""
        elif etype == "tool_call":
            role, name, status = "", _text(event, "name"), ""
        elif etype == "tool_result":
            role, name, status = "", "", _text(event, "status")
        else:
            role = name = status = ""
        call_id = event.get("call_id")
        return (
            st,
            seq,
            etype[:40],
            turn if turn.__class__ is int else None,
            role,
            name,
            _text(event, "call_id") if call_id is not None else "",
            status,
            line,
            payload,
        )

    def rejected_all(self, fmt: str) -> str:
        """One sentence for a file whose every record was rejected: the format it was read as
        and the problem most of its reported errors share (usually one missing field)."""
        counts: dict[tuple[str, str], int] = {}
        for e in self.errors:
            counts[(e.path, e.message)] = counts.get((e.path, e.message), 0) + 1
        if not counts:
            return f"every record was rejected when read as {fmt}"
        (path, message), n = max(counts.items(), key=lambda kv: kv[1])
        return (
            f"every record was rejected when read as {fmt}; the most common problem "
            f"({n} of the first {len(self.errors)} errors) is at {path}: {message}"
        )

    def finish(self) -> tuple[list[TraceState], list[TraceState]]:
        """The rules judged at the end. Returns (accepted, rejected) trace states."""
        accepted: list[TraceState] = []
        rejected: list[TraceState] = []
        for st in self.traces.values():
            if not st.rejected and st.header is not None:
                first = st.min_seq if st.explicit_seq else 0
                if st.header_seq != first:
                    self.error(
                        st.header_line,
                        st.trace_id,
                        "$.type",
                        'the trace header (type "trace") must be the first event of its trace',
                    )
            (rejected if st.rejected else accepted).append(st)
        return accepted, rejected
