"""`POST /v1/traces`: the OTLP/HTTP trace endpoint, for OpenTelemetry exporters.

Authenticated by a project token in `Authorization: Bearer ta_…` (what
`OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer ta_…` sends); a token that may upload sends
spans into its own project only. The answers are OTLP's, encoded like the request (protobuf or
JSON): 200 with an `ExportTraceServiceResponse` (`partial_success` counts spans without valid
ids), 400 for a body that is no export request, 401/403 for the token, 413 over
TA_OTLP_MAX_BODY_BYTES (sent or decompressed) or for more spans than
TA_OTLP_MAX_PENDING_SPANS (or bytes than TA_OTLP_MAX_PENDING_BYTES) in one request, 415 for
another content type, and 429/503 with `Retry-After` — the codes exporters retry — when the
token is throttled, the project has that many spans or bytes waiting (`backlog`), or the
database is unreachable. CSRF does not apply:
no cookie authenticates here.
"""

from __future__ import annotations

import math

import orjson
from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions

from traces.api_auth import ProjectTokenAuthentication
from traces.models import ProjectToken
from traces.otlp_receiver.backlog import backlog
from traces.otlp_receiver.decode import JSON, PROTOBUF, BadRequest, TooLarge, decode, decompress
from traces.otlp_receiver.store import spans_insert

# google.rpc.Code values for the Status body of an error response.
GRPC_CODE = {400: 3, 401: 16, 403: 7, 405: 12, 413: 8, 415: 3, 429: 8, 503: 14}
RETRY_SECONDS = 5


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _status_proto(code: int, message: str) -> bytes:
    """A google.rpc.Status (code = field 1, message = field 2), encoded by hand: the message
    type is not part of the OTLP protos this app depends on."""
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


class _Reply:
    def __init__(self, content_type: str) -> None:
        self.json = content_type.split(";", 1)[0].strip().lower() in JSON

    def ok(self, rejected: int, message: str) -> HttpResponse:
        if self.json:
            body: dict = {}
            if rejected:
                body["partialSuccess"] = {"rejectedSpans": rejected, "errorMessage": message}
            return HttpResponse(orjson.dumps(body), content_type="application/json")
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTracePartialSuccess,
            ExportTraceServiceResponse,
        )

        response = ExportTraceServiceResponse()
        if rejected:
            response.partial_success.CopyFrom(
                ExportTracePartialSuccess(rejected_spans=rejected, error_message=message)
            )
        return HttpResponse(response.SerializeToString(), content_type="application/x-protobuf")

    def error(self, status: int, message: str, *, retry_after: int | None = None) -> HttpResponse:
        code = GRPC_CODE.get(status, 2)
        if self.json:
            response = HttpResponse(
                orjson.dumps({"code": code, "message": message}),
                status=status,
                content_type="application/json",
            )
        else:
            response = HttpResponse(
                _status_proto(code, message),
                status=status,
                content_type="application/x-protobuf",
            )
        if retry_after is not None:
            response["Retry-After"] = str(max(int(retry_after), 1))
        if status == 401:
            response["WWW-Authenticate"] = "Bearer"
        return response


def _token(request: HttpRequest) -> ProjectToken:
    found = ProjectTokenAuthentication().authenticate(request)
    if found is None:
        raise exceptions.NotAuthenticated(
            "send a project token: OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer ta_…"
        )
    token = found[1]
    assert isinstance(token, ProjectToken)
    return token


@csrf_exempt
def traces(request: HttpRequest) -> HttpResponse:
    content_type = request.META.get("CONTENT_TYPE", "")
    reply = _Reply(content_type)
    if request.method != "POST":
        response = reply.error(405, "POST OTLP export requests to this endpoint")
        response["Allow"] = "POST"
        return response
    try:
        token = _token(request)
    except exceptions.Throttled as exc:
        return reply.error(429, str(exc.detail), retry_after=int(exc.wait or 1))
    except (exceptions.AuthenticationFailed, exceptions.NotAuthenticated) as exc:
        return reply.error(401, str(exc.detail))
    except DatabaseError:
        return reply.error(503, "the database is unavailable", retry_after=RETRY_SECONDS)
    if not token.allows(ProjectToken.Scope.UPLOAD, writes=True):
        return reply.error(403, "this project token may not send spans")
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind not in PROTOBUF + JSON:
        return reply.error(
            415, f"unsupported Content-Type {kind!r}; send application/x-protobuf or json"
        )
    limit = settings.TA_OTLP_MAX_BODY_BYTES
    raw_length = request.META.get("CONTENT_LENGTH") or ""
    too_large = f"the request body is larger than {limit} bytes (TA_OTLP_MAX_BODY_BYTES)"
    if raw_length.isdigit() and int(raw_length) > limit:
        return reply.error(413, too_large)
    body = request.read(limit + 1)
    if len(body) > limit:
        return reply.error(413, too_large)
    try:
        raw = decompress(body, request.META.get("HTTP_CONTENT_ENCODING", ""), limit)
        decoded = decode(raw, content_type)
    except TooLarge:
        return reply.error(413, too_large)
    except BadRequest as exc:
        return reply.error(400, str(exc))
    refused = _over_limits(reply, len(decoded.spans), len(raw))
    if refused is not None:
        return refused
    try:
        waiting, waiting_bytes = backlog(token.project_id)
        refused = _backlog_full(reply, waiting, waiting_bytes, len(decoded.spans), len(raw))
        if refused is not None:
            return refused
        roots = spans_insert(token.project_id, decoded.spans)
    except DatabaseError:
        return reply.error(503, "the database is unavailable", retry_after=RETRY_SECONDS)
    if roots:
        # Here, not at the top: the URLconf imports this module, and Django's start loads no
        # Celery (the task module loads the app).
        from traces.otlp_receiver.tasks import finish_later

        finish_later(token.project_id, roots)
    return reply.ok(decoded.rejected, decoded.message)


def _over_limits(reply: _Reply, spans: int, size: int) -> HttpResponse | None:
    """413 for a request that could never wait in the buffer, however empty."""
    most, most_bytes = settings.TA_OTLP_MAX_PENDING_SPANS, settings.TA_OTLP_MAX_PENDING_BYTES
    if spans > most:
        return reply.error(
            413,
            f"the request has {spans} spans, more than a project may have waiting"
            f" ({most}, TA_OTLP_MAX_PENDING_SPANS): lower OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
        )
    if size > most_bytes:
        return reply.error(
            413,
            f"the request has {size} bytes of spans, more than a project may have waiting"
            f" ({most_bytes}, TA_OTLP_MAX_PENDING_BYTES): lower OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
        )
    return None


def _backlog_full(
    reply: _Reply, waiting: int, waiting_bytes: int, spans: int, size: int
) -> HttpResponse | None:
    """429 with Retry-After while the project's waiting spans leave no room for the request:
    exporters retry once traces complete. The request counts here as its decoded body's size;
    once stored, its spans count as their stored documents (larger for a protobuf body), so
    the bytes, like the spans, can pass their limit by one request's."""
    most, most_bytes = settings.TA_OTLP_MAX_PENDING_SPANS, settings.TA_OTLP_MAX_PENDING_BYTES
    retry = max(RETRY_SECONDS, math.ceil(settings.TA_OTLP_GRACE_SECONDS))
    if waiting + spans > most:
        return reply.error(
            429,
            f"the project has {waiting} spans waiting for their traces to complete; at most"
            f" {most} may wait (TA_OTLP_MAX_PENDING_SPANS): retry once traces complete",
            retry_after=retry,
        )
    if waiting_bytes + size > most_bytes:
        return reply.error(
            429,
            f"the project has {waiting_bytes} bytes of spans waiting for their traces to"
            f" complete; at most {most_bytes} may wait (TA_OTLP_MAX_PENDING_BYTES): retry once"
            " traces complete",
            retry_after=retry,
        )
    return None
