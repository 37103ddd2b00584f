"""Helpers shared by the importers: event building, JSON reading, unmapped-field bookkeeping.

Kept free of Django so importers run anywhere (CLI, worker, tests). Events are plain dicts built
once and never copied: importers hand source sub-objects (argument objects, reward details)
straight into events, because the ingest path serialises them immediately afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

import orjson

from .base import ImportReport, SourceEvent

JSONDecodeError = orjson.JSONDecodeError

# Success threshold for rewards in [0, 1]: floating-point rewards such as 0.9999999 count as 1.
SUCCESS_EPS = 1e-6


def type_name(value: Any) -> str:
    """The JSON name of a Python value's type, for 'expected X, found Y' messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def short(value: Any, limit: int = 200) -> str:
    """A short text sample of a value for report examples."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = orjson.dumps(value, default=str).decode()
        except TypeError:
            text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def stream_name(stream: BinaryIO, report: ImportReport | None = None) -> str:
    """The uploaded file's name: `report.filename` when the caller set it, else the stream's
    `name` (real files), else '' (BytesIO, pipes). Importers use it only for hints (model,
    domain), never for trace ids, so a renamed upload keeps its trace ids."""
    given = report.filename if report is not None else None
    if isinstance(given, str) and given:
        return given
    name = getattr(stream, "name", "")
    return name if isinstance(name, str) else ""


def file_stem(stream: BinaryIO, report: ImportReport | None = None) -> str:
    name = os.path.basename(stream_name(stream, report))
    for suffix in (".jsonl", ".json", ".gz"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


class RecordFailed(Exception):
    """Raised inside an importer's record conversion after `report.error` was called.

    Internal control flow only: `convert` catches it and skips the record, so it never escapes.
    """


class Trace:
    """Builds the events of one trace: numbers `seq`, tracks the current turn, keeps meta.

    `fail` records an error for this trace and aborts the record (nothing of it is yielded, since
    the ingest rejects the whole trace anyway); `unmapped` keeps a value in `meta` and counts it.
    """

    __slots__ = ("trace_id", "line", "report", "events", "turn", "prefix")

    def __init__(self, trace_id: str, line: int, report: ImportReport, prefix: str = "") -> None:
        self.trace_id = trace_id
        self.line = line
        self.report = report
        self.events: list[dict] = []
        self.turn: int | None = None
        self.prefix = prefix

    def add(self, type_: str, /, **fields: Any) -> dict:
        event = {"trace_id": self.trace_id, "type": type_, "seq": len(self.events)}
        if self.turn is not None and type_ != "trace":
            event["turn"] = self.turn
        for key, value in fields.items():
            if value is not None:
                event[key] = value
        self.events.append(event)
        return event

    def header(
        self,
        *,
        agent: str | None = None,
        model: str | None = None,
        task: dict | None = None,
        env: dict | None = None,
        tools: list | None = None,
        outcome: dict | None = None,
    ) -> dict:
        """The `trace` header, first event of the trace; every SPEC header field is present."""
        moved = {}
        if agent is not None and not isinstance(agent, str):
            moved["agent"], agent = agent, None
        if model is not None and not isinstance(model, str):
            moved["model"], model = model, None
        event = {
            "trace_id": self.trace_id,
            "type": "trace",
            "seq": len(self.events),
            "agent": agent,
            "model": model,
            "task": task if task is not None else {"benchmark": None, "category": None},
            "env": env if env is not None else {"name": None, "config": {}},
            "tools": tools if tools is not None else [],
            "outcome": outcome if outcome is not None else {"success": None, "reward": None},
        }
        if event["task"].get("id", "") is None:
            del event["task"]["id"]  # v1: task.id is a string or integer when present
        if moved:  # v1 wants strings here; anything else is kept in meta
            event["meta"] = moved
            self.report.note_flag("header_field_not_string")
        self.events.append(event)
        return event

    def fail(self, path: str, message: str) -> RecordFailed:
        self.report.error(line=self.line, trace_id=self.trace_id, path=path, message=message)
        return RecordFailed(message)

    def flag(self, event: dict, key: str, meta_key: str, value: Any) -> None:
        """Keep a suspicious value in the event's meta and count it in the report's flags."""
        event.setdefault("meta", {})[meta_key] = value
        self.report.note_flag(key)

    def keep(
        self, event: dict, source: dict, mapped: Iterable[str] | frozenset, where: str
    ) -> None:
        """Copy every key of `source` that is not in `mapped` into `event.meta`, counting it."""
        extra = [k for k in source if k not in mapped]
        if not extra:
            return
        meta = event.setdefault("meta", {})
        report = self.report
        for key in extra:
            value = source[key]
            meta[key] = value
            note = f"{where}.{key}"
            if len(report.examples.get(note, ())) < report.MAX_EXAMPLES:
                report.note_unmapped(note, f"{self.trace_id}: {short(value)}")
            else:
                report.note_unmapped(note, "")

    def source_events(self) -> Iterator[SourceEvent]:
        line = self.line
        for event in self.events:
            yield SourceEvent(line, event)


INTERNAL_ERROR = "internal error while importing this record"


def internal_error(trace: Trace, exc: Exception) -> None:
    """Report an unexpected exception against its record.

    Such an exception is a bug in the importer, but it must not lose the rest of the file (and
    `convert` must never raise on data): the record is rejected with the exception text.
    """
    trace.report.error(
        line=trace.line,
        trace_id=trace.trace_id,
        path="$",
        message=f"{INTERNAL_ERROR} ({type(exc).__name__}: {exc}); please report it",
    )


def record_events(trace: Trace, build: Callable[..., object], *args: Any) -> Iterator[SourceEvent]:
    """One record's events: `build(*args)` fills `trace`; a record that fails (reported by
    `trace.fail`, or an internal error reported here) yields nothing and the caller goes on."""
    try:
        build(*args)
    except RecordFailed:
        return
    except Exception as exc:  # noqa: BLE001 — see internal_error
        internal_error(trace, exc)
        return
    yield from trace.source_events()


def convert_jsonl(
    stream: BinaryIO,
    report: ImportReport,
    *,
    identify: Callable[[Any, int], tuple[str, str, str]],
    build: Callable[[Trace, Any], None],
) -> Iterator[SourceEvent]:
    """The loop every JSONL importer shares: one trace per record, ids unique in the file, a
    record that fails is reported (its events never yielded) and the next one goes on.

    ``identify(record, line)`` gives (trace id, JSON path of the id, what to call a repeat of
    it); ``build(trace, record)`` fills the trace or raises `RecordFailed`."""
    seen: dict[str, int] = {}
    for line, record in iter_jsonl(stream, report):
        trace_id, id_path, repeat = identify(record, line)
        trace = Trace(trace_id, line, report)
        if trace_id in seen:
            trace.fail(id_path, f"{repeat} again (first on line {seen[trace_id]})")
            continue
        seen[trace_id] = line
        yield from record_events(trace, build, trace, record)


def require(
    trace: Trace, value: Any, kind: type | tuple[type, ...], path: str, expected: str
) -> Any:
    """Return `value` when it has the expected type, else record an error and abort the record."""
    if isinstance(value, kind) and not (isinstance(value, bool) and bool not in _as_tuple(kind)):
        return value
    if value is None:
        raise trace.fail(path, f"expected {expected}, found nothing (field missing or null)")
    raise trace.fail(path, f"expected {expected}, found {type_name(value)} {short(value, 60)}")


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def iter_jsonl(stream: BinaryIO, report: ImportReport) -> Iterator[tuple[int, Any]]:
    """Yield (1-based line, parsed object) for every non-blank line; report unparsable lines."""
    for number, raw in enumerate(stream, 1):
        if not raw.strip():
            continue
        try:
            yield number, orjson.loads(raw)
        except JSONDecodeError as exc:
            report.error(
                line=number,
                trace_id=None,
                path="$",
                message=f"expected a JSON object on this line, found invalid JSON ({exc})",
            )


def read_json_document(stream: BinaryIO, report: ImportReport) -> Any | None:
    """Parse a whole JSON document (read fully into memory); report line 0 on failure."""
    data = stream.read()
    try:
        return orjson.loads(data)
    except JSONDecodeError as exc:
        report.error(
            line=0,
            trace_id=None,
            path="$",
            message=f"expected one JSON document, found invalid JSON ({exc})",
        )
        return None


def parse_arguments(raw: Any) -> tuple[dict | None, str | None]:
    """Parse a tool call's argument string. Returns (object, None) or (None, why it failed)."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or raw == "":
        return {}, None
    if not isinstance(raw, str):
        return None, f"expected a JSON object string, found {type_name(raw)}"
    try:
        value = orjson.loads(raw)
    except JSONDecodeError as exc:
        return None, f"expected a JSON object string, found invalid JSON ({exc})"
    if not isinstance(value, dict):
        return None, f"expected a JSON object string, found a JSON {type_name(value)}"
    return value, None


def success_from_reward(reward: Any) -> bool | None:
    if isinstance(reward, bool) or not isinstance(reward, int | float):
        return None
    return reward >= 1 - SUCCESS_EPS


#: Records a sniff looks at: a file whose first record is odd (a task the run skipped, a
#: record without attempts) is still recognised by the records after it.
SNIFF_RECORDS = 8


def any_record(head: bytes, accepts: Callable[[dict], bool], limit: int = SNIFF_RECORDS) -> bool:
    """Whether any of the first ``limit`` complete JSON-object lines of ``head`` is accepted."""
    return any(isinstance(r, dict) and accepts(r) for r in head_lines(head, limit))


def head_lines(head: bytes, limit: int = 3) -> list[Any]:
    """Parse the first complete lines of a file head as JSON; unparsable lines are skipped."""
    out = []
    for raw in head.split(b"\n")[: limit + 1]:
        if not raw.strip():
            continue
        try:
            out.append(orjson.loads(raw))
        except JSONDecodeError:
            continue
        if len(out) >= limit:
            break
    return out
