"""OTLP/HTTP request bodies → span rows.

A body is an `ExportTraceServiceRequest`, as protobuf (`application/x-protobuf`) or OTLP/JSON
(`application/json`), optionally gzip- or deflate-encoded. Both become the same row per span:
the span in OTLP/JSON form with ids as lowercase hex, plus its resource and scope — exactly what
an OTLP/JSON file of those spans holds, so the OTLP importer reads the buffered trace as it reads
a file. A span without a readable trace or span id is rejected (the response's partial
success counts it); a body that is not a request at all is a `BadRequest`.
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from traces.importers._otlp_read import hex_id

if TYPE_CHECKING:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

PROTOBUF = ("application/x-protobuf", "application/protobuf")
JSON = ("application/json",)


class BadRequest(ValueError):
    """The body cannot be read as an export request (400)."""


class TooLarge(ValueError):
    """The body, decompressed, passes the size limit (413)."""


@dataclass(slots=True)
class SpanRow:
    trace_id: str
    span_id: str
    root: bool
    resource: dict
    scope: dict
    span: dict


@dataclass(slots=True)
class Decoded:
    spans: list[SpanRow]
    rejected: int
    message: str  # why the first rejected span was rejected


def decompress(body: bytes, encoding: str, limit: int) -> bytes:
    """The body without its Content-Encoding (gzip, deflate or none), at most `limit` bytes."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate", "x-gzip"):
        raise BadRequest(f"unsupported Content-Encoding {encoding!r}; send gzip, deflate or none")
    # wbits 47: a gzip or zlib header, detected; a raw deflate stream is tried after.
    for wbits in (47, -15):
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(body, limit + 1)
        except zlib.error:
            continue
        if len(out) > limit or inflater.unconsumed_tail:
            raise TooLarge(f"the decompressed body is larger than {limit} bytes")
        if not inflater.eof:
            # The stream stops before its end: what came may still parse, as fewer spans.
            raise BadRequest(f"the body is truncated {encoding} data")
        return out
    raise BadRequest(f"the body is not valid {encoding} data")


def decode(body: bytes, content_type: str) -> Decoded:
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind in PROTOBUF:
        return _from_protobuf(body)
    if kind in JSON:
        return _from_json(body)
    raise BadRequest(
        f"unsupported Content-Type {kind!r}; send application/x-protobuf or application/json"
    )


# --- OTLP/JSON ----------------------------------------------------------------------------


def _from_json(body: bytes) -> Decoded:
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"the body is not JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("resourceSpans", []), list):
        raise BadRequest("expected an ExportTraceServiceRequest object with resourceSpans")
    out = Decoded([], 0, "")
    for rs in doc.get("resourceSpans", []):
        if not isinstance(rs, dict):
            raise BadRequest("expected resourceSpans to hold objects")
        resource = rs.get("resource") if isinstance(rs.get("resource"), dict) else {}
        scope_spans = rs.get("scopeSpans", rs.get("instrumentationLibrarySpans")) or []
        if not isinstance(scope_spans, list):
            raise BadRequest("expected scopeSpans to be an array")
        for ss in scope_spans:
            if not isinstance(ss, dict):
                raise BadRequest("expected scopeSpans to hold objects")
            scope = ss.get("scope") or ss.get("instrumentationLibrary") or {}
            scope = scope if isinstance(scope, dict) else {}
            spans = ss.get("spans") or []
            if not isinstance(spans, list):
                raise BadRequest("expected spans to be an array")
            for raw in spans:
                _add(out, resource, scope, raw)
    return out


def _add(out: Decoded, resource: dict, scope: dict, raw: Any) -> None:
    if not isinstance(raw, dict):
        _reject(out, "a span is not an object")
        return
    trace_id = hex_id(raw.get("traceId"), 16)
    span_id = hex_id(raw.get("spanId"), 8)
    if trace_id is None or trace_id == "0" * 32:
        _reject(out, "a span has no valid traceId (16 bytes, hex)")
        return
    if span_id is None or span_id == "0" * 16:
        _reject(out, "a span has no valid spanId (8 bytes, hex)")
        return
    parent = hex_id(raw.get("parentSpanId"), 8)
    span = {**raw, "traceId": trace_id, "spanId": span_id}
    if parent:
        span["parentSpanId"] = parent
    else:
        span.pop("parentSpanId", None)
    out.spans.append(SpanRow(trace_id, span_id, not parent, resource, scope, span))


def _reject(out: Decoded, message: str) -> None:
    out.rejected += 1
    out.message = out.message or message


# --- protobuf -----------------------------------------------------------------------------


def _from_protobuf(body: bytes) -> Decoded:
    # Loaded on the first protobuf request, not with the URLconf: 0.2 s of every web start.
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    try:
        request = ExportTraceServiceRequest.FromString(body)
    except (DecodeError, RuntimeWarning, ValueError) as exc:
        raise BadRequest(f"the body is not a protobuf ExportTraceServiceRequest ({exc})") from None
    out = Decoded([], 0, "")
    for rs in request.resource_spans:
        resource: dict = {"attributes": _attrs(rs.resource.attributes)}
        for ss in rs.scope_spans:
            scope: dict = {"name": ss.scope.name}
            if ss.scope.version:
                scope["version"] = ss.scope.version
            if ss.scope.attributes:
                scope["attributes"] = _attrs(ss.scope.attributes)
            for sp in ss.spans:
                if len(sp.trace_id) != 16 or not any(sp.trace_id):
                    _reject(out, "a span has no valid trace_id (16 bytes)")
                    continue
                if len(sp.span_id) != 8 or not any(sp.span_id):
                    _reject(out, "a span has no valid span_id (8 bytes)")
                    continue
                trace_id, span_id = sp.trace_id.hex(), sp.span_id.hex()
                span: dict = {
                    "traceId": trace_id,
                    "spanId": span_id,
                    "name": sp.name,
                    "kind": sp.kind,
                    "startTimeUnixNano": str(sp.start_time_unix_nano),
                    "endTimeUnixNano": str(sp.end_time_unix_nano),
                    "attributes": _attrs(sp.attributes),
                }
                parent = len(sp.parent_span_id) == 8 and any(sp.parent_span_id)
                if parent:
                    span["parentSpanId"] = sp.parent_span_id.hex()
                if sp.trace_state:
                    span["traceState"] = sp.trace_state
                if sp.HasField("status") and (sp.status.code or sp.status.message):
                    span["status"] = {"code": int(sp.status.code), "message": sp.status.message}
                if sp.events:
                    span["events"] = [
                        {
                            "timeUnixNano": str(e.time_unix_nano),
                            "name": e.name,
                            "attributes": _attrs(e.attributes),
                        }
                        for e in sp.events
                    ]
                if sp.links:
                    span["links"] = [
                        {
                            "traceId": link.trace_id.hex(),
                            "spanId": link.span_id.hex(),
                            "attributes": _attrs(link.attributes),
                        }
                        for link in sp.links
                    ]
                out.spans.append(SpanRow(trace_id, span_id, not parent, resource, scope, span))
    return out


def _attrs(items: Any) -> list[dict]:
    out = []
    for kv in items:
        v = kv.value
        # Most attributes are strings: answered here, without a call per value.
        if v.WhichOneof("value") == "string_value":
            out.append({"key": kv.key, "value": {"stringValue": v.string_value}})
        else:
            out.append({"key": kv.key, "value": _value(v)})
    return out


def _value(v: AnyValue) -> dict:
    which = v.WhichOneof("value")
    if which == "string_value":
        return {"stringValue": v.string_value}
    if which == "int_value":
        return {"intValue": str(v.int_value)}
    if which == "bool_value":
        return {"boolValue": v.bool_value}
    if which == "double_value":
        return {"doubleValue": v.double_value}
    if which == "array_value":
        return {"arrayValue": {"values": [_value(x) for x in v.array_value.values]}}
    if which == "kvlist_value":
        kvs: list[KeyValue] = list(v.kvlist_value.values)
        return {"kvlistValue": {"values": _attrs(kvs)}}
    if which == "bytes_value":
        return {"bytesValue": base64.b64encode(v.bytes_value).decode()}
    return {}
