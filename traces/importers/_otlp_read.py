"""Reading OTLP/JSON trace exports into flat span records.

An OTLP/JSON file is one `ExportTraceServiceRequest` (`{"resourceSpans": [{"resource": …,
"scopeSpans": [{"scope": …, "spans": [...]}]}]}`) or, as collectors' file exporters write it,
one such request per line. Attribute values are OTLP `AnyValue`s (`{"stringValue": …}`,
`{"intValue": "12"}`, arrays, key-value lists); trace and span ids are hex (the OTLP/JSON rule)
or base64 (what a plain protobuf JSON dump gives) — both are read, hex is what we keep.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson

from ._common import short, type_name
from .base import ImportReport

_HEX = re.compile(r"^[0-9a-fA-F]+$")
ERROR_STATUS = ("STATUS_CODE_ERROR", 2)


@dataclass(slots=True)
class Span:
    line: int
    path: str
    trace_id: str
    span_id: str
    parent: str | None
    name: str
    start: int
    end: int
    attrs: dict[str, Any]
    status: str
    status_message: str
    resource: dict[str, Any]
    scope: str
    events: list = field(default_factory=list)

    @property
    def error(self) -> bool:
        return self.status == "error"


def any_value(value: Any) -> Any:
    """The Python value of an OTLP AnyValue."""
    if not isinstance(value, dict) or len(value) != 1:
        return value
    ((kind, inner),) = value.items()
    if kind == "intValue":
        try:
            return int(inner)
        except (TypeError, ValueError):
            return inner
    if kind == "arrayValue":
        values = inner.get("values") if isinstance(inner, dict) else None
        return [any_value(v) for v in values] if isinstance(values, list) else []
    if kind == "kvlistValue":
        return attributes(inner.get("values") if isinstance(inner, dict) else None)
    return inner  # stringValue, boolValue, doubleValue, bytesValue (kept as given)


def attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    out = {}
    for kv in items:
        if isinstance(kv, dict) and isinstance(kv.get("key"), str):
            out[kv["key"]] = any_value(kv.get("value"))
    return out


def hex_id(value: Any, length: int) -> str | None:
    """A trace (16 bytes) or span (8 bytes) id as lowercase hex, from hex or base64."""
    if not isinstance(value, str) or not value:
        return None
    if len(value) == 2 * length and _HEX.match(value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.hex() if len(raw) == length else None


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def documents(stream: BinaryIO, report: ImportReport) -> list[tuple[int, Any]]:
    """(line, request) pairs: the whole file as one JSON document, else one per line."""
    data = stream.read()
    try:
        return [(1, orjson.loads(data))]
    except orjson.JSONDecodeError:
        pass
    out = []
    for number, raw in enumerate(data.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            out.append((number, orjson.loads(raw)))
        except orjson.JSONDecodeError as exc:
            report.error(
                line=number,
                trace_id=None,
                path="$",
                message=f"expected an OTLP/JSON request object, found invalid JSON ({exc})",
            )
    return out


def request_spans(
    requests: Iterable[tuple[int, Any]], report: ImportReport
) -> tuple[list[Span], set[str]]:
    """Every readable span of the (line, request) pairs — a file's `documents`, or the OTLP
    receiver's buffered spans as one request — and the trace ids (hex) with an unreadable span
    (rejected whole)."""
    spans: list[Span] = []
    broken: set[str] = set()
    for line, doc in requests:
        if not isinstance(doc, dict) or not isinstance(doc.get("resourceSpans"), list):
            found = type_name(doc.get("resourceSpans")) if isinstance(doc, dict) else type_name(doc)
            report.error(
                line=line,
                trace_id=None,
                path="$.resourceSpans",
                message=f"expected an array of resource spans, found {found}",
            )
            continue
        for i, rs in enumerate(doc["resourceSpans"]):
            if not isinstance(rs, dict):
                continue
            res = rs.get("resource")
            resource = attributes(res.get("attributes") if isinstance(res, dict) else None)
            scope_spans = rs.get("scopeSpans", rs.get("instrumentationLibrarySpans"))
            for j, ss in enumerate(scope_spans if isinstance(scope_spans, list) else []):
                if not isinstance(ss, dict):
                    continue
                scope = ss.get("scope") or ss.get("instrumentationLibrary") or {}
                scope_name = scope.get("name", "") if isinstance(scope, dict) else ""
                scope_name = scope_name if isinstance(scope_name, str) else ""
                for k, raw in enumerate(
                    ss.get("spans") if isinstance(ss.get("spans"), list) else []
                ):
                    path = f"$.resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                    span = _span(line, path, raw, resource, str(scope_name), report, broken)
                    if span is not None:
                        spans.append(span)
    return spans, broken


def _span(
    line: int,
    path: str,
    raw: Any,
    resource: dict,
    scope: str,
    report: ImportReport,
    broken: set[str],
) -> Span | None:
    if not isinstance(raw, dict):
        report.error(
            line=line, trace_id=None, path=path, message=f"expected a span, found {type_name(raw)}"
        )
        return None
    trace_id = hex_id(raw.get("traceId"), 16)
    if trace_id is None:
        report.error(
            line=line,
            trace_id=None,
            path=f"{path}.traceId",
            message="expected a 16-byte trace id (32 hex digits or base64), found "
            f"{short(raw.get('traceId'), 60)}",
        )
        return None
    span_id = hex_id(raw.get("spanId"), 8)
    if span_id is None:
        report.error(
            line=line,
            trace_id=f"otel:{trace_id}",
            path=f"{path}.spanId",
            message="expected an 8-byte span id (16 hex digits or base64), found "
            f"{short(raw.get('spanId'), 60)}",
        )
        broken.add(trace_id)
        return None
    status = raw.get("status") if isinstance(raw.get("status"), dict) else {}
    code = status.get("code")
    return Span(
        line=line,
        path=path,
        trace_id=trace_id,
        span_id=span_id,
        parent=hex_id(raw.get("parentSpanId"), 8),
        name=raw["name"] if isinstance(raw.get("name"), str) else "",
        start=_int(raw.get("startTimeUnixNano")),
        end=_int(raw.get("endTimeUnixNano")),
        attrs=attributes(raw.get("attributes")),
        status="error" if code in ERROR_STATUS else ("ok" if code else "unset"),
        status_message=status.get("message", "") if isinstance(status.get("message"), str) else "",
        resource=resource,
        scope=scope,
        events=raw.get("events") if isinstance(raw.get("events"), list) else [],
    )
