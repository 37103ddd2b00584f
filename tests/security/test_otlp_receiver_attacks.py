"""The OTLP receiver against hostile senders: every token role, another project's token and
trace ids, huge and deeply nested attribute values, 10,000 spans at once, broken compression,
wrong content types, NUL characters. Each gets a specific OTLP answer (never a 500), and no
span, trace or raw file crosses from one project to another."""

from __future__ import annotations

import gzip
import zlib
from datetime import timedelta

import orjson
import pytest
from django.test import Client
from django.utils import timezone
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tests.importers.otlp_samples import openinference_spans
from tests.ingest.test_otlp_receiver import PB, events_of, file_upload, finish_all, post, proto
from traces.models import Membership, Project, ProjectToken, Trace, Upload
from traces.otlp_receiver.models import OtlpSpan

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_broker(monkeypatch):  # type: ignore[no-untyped-def]
    """Completion checks are not queued: these tests finish traces themselves."""
    monkeypatch.setattr("traces.otlp_receiver.tasks.finish_later", lambda p, ts: True)


@pytest.fixture(scope="module")
def spans():  # type: ignore[no-untyped-def]
    return openinference_spans()


def request(n: int = 1, *, trace: int = 1, attrs: list[KeyValue] | None = None) -> bytes:
    """An export request of `n` spans of one trace, the first its root."""
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    for i in range(n):
        sp = ss.spans.add()
        sp.trace_id = trace.to_bytes(16, "big")
        sp.span_id = (i + 1).to_bytes(8, "big")
        if i:
            sp.parent_span_id = (1).to_bytes(8, "big")
        sp.name = f"span {i}"
        sp.start_time_unix_nano = 1_700_000_000_000_000_000 + i
        sp.end_time_unix_nano = 1_700_000_000_000_000_000 + i + 1
        if attrs:
            sp.attributes.extend(attrs)
    return req.SerializeToString()


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def nested(depth: int, *, trace: int = 1) -> bytes:
    """A request of one span whose attribute is `depth` key-value lists inside each other,
    encoded by hand (the protobuf library will not build what it refuses to read)."""
    value = _field(1, b"bottom")  # AnyValue.string_value
    for _ in range(depth):
        kv = _field(1, b"k") + _field(2, value)  # KeyValue
        value = _field(6, _field(1, kv))  # AnyValue.kvlist_value.values
    span = ExportTraceServiceRequest.FromString(request(trace=trace))
    sp = span.resource_spans[0].scope_spans[0].spans[0].SerializeToString()
    sp += _field(9, _field(1, b"deep") + _field(2, value))  # Span.attributes
    return _field(1, _field(2, _field(2, sp)))  # resource_spans.scope_spans.spans


def test_read_expired_and_revoked_tokens_are_refused_and_nothing_is_stored(project, spans):
    _t, read = ProjectToken.issue(project=project, name="viewer", scope=ProjectToken.Scope.READ)
    r = post(read, proto(spans))
    assert r.status_code == 403 and b"may not send spans" in r.content
    old, expired = ProjectToken.issue(project=project, name="old")
    ProjectToken.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(days=1))
    assert post(expired, proto(spans)).status_code == 401
    gone, revoked = ProjectToken.issue(project=project, name="gone")
    ProjectToken.objects.filter(pk=gone.pk).update(revoked_at=timezone.now())
    assert post(revoked, proto(spans)).status_code == 401
    assert post("", proto(spans)).status_code == 401
    assert OtlpSpan.objects.count() == 0


def test_another_projects_token_and_colliding_trace_ids_stay_in_their_own_project(
    project, upload_token, spans, alice, charlie
):
    """Charlie's project receives the very trace and span ids Alice's already imported: each
    project imports its own traces (Charlie's spans are not "late" spans of Alice's), and neither
    project's uploads, traces or raw files show anything of the other's."""
    theirs = Project.objects.create(name="bravo")
    Membership.objects.create(project=theirs, user=charlie, role=Membership.Role.OWNER)
    _t, their_token = ProjectToken.issue(project=theirs, name="agent")
    assert post(upload_token, proto(spans)).status_code == 200
    mine = finish_all(project)
    assert post(their_token, proto(spans)).status_code == 200
    their_uploads = finish_all(theirs)
    assert [u.traces_accepted for u in mine + their_uploads] == [1, 1, 1, 1]
    assert not OtlpSpan.objects.filter(state="late").exists()
    assert events_of(project) == events_of(theirs) == file_upload(alice, spans)
    assert set(Trace.objects.filter(project=project).values_list("upload", flat=True)) == {
        u.pk for u in mine
    }
    assert OtlpSpan.objects.filter(upload__in=mine, project=project).count() == len(spans)
    assert OtlpSpan.objects.filter(upload__in=their_uploads, project=theirs).count() == len(spans)
    # The raw file of an upload the receiver made is its own spans, for its own members only.
    c = Client()
    c.force_login(charlie)
    assert c.get(f"/uploads/{mine[0].pk}/raw/").status_code == 404
    got = set()
    for upload in their_uploads:
        raw = c.get(f"/uploads/{upload.pk}/raw/")
        assert raw.status_code == 200
        doc = orjson.loads(b"".join(raw.streaming_content))
        got |= {
            s["spanId"]
            for rs in doc["resourceSpans"]
            for ss in rs["scopeSpans"]
            for s in ss["spans"]
        }
    assert got == {f"{s.context.span_id:016x}" for s in spans}


def test_huge_attribute_value_is_kept_whole(project, upload_token, settings):
    settings.TA_OTLP_MAX_BODY_BYTES = 4 * 1024 * 1024
    big = "x" * (3 * 1024 * 1024)
    r = post(
        upload_token, request(attrs=[KeyValue(key="input.value", value=AnyValue(string_value=big))])
    )
    assert r.status_code == 200, r.content
    (upload,) = finish_all(project)
    assert upload.status == "done" and upload.traces_accepted == 1
    header = Trace.objects.get(project=project).header
    assert header["task"]["input"] == big
    over = request(attrs=[KeyValue(key="v", value=AnyValue(string_value="y" * 5_000_000))])
    r = post(upload_token, over)
    assert r.status_code == 413 and b"TA_OTLP_MAX_BODY_BYTES" in r.content


def test_deeply_nested_attributes_get_a_clear_answer(project, upload_token):
    # Within protobuf's nesting limit: accepted and imported.
    assert post(upload_token, nested(25)).status_code == 200
    (upload,) = finish_all(project)
    assert upload.status == "done" and upload.traces_accepted == 1
    # Past it: a 400 naming the body, for protobuf and for JSON alike.
    r = post(upload_token, nested(200, trace=2))
    assert r.status_code == 400 and b"not a protobuf ExportTraceServiceRequest" in r.content
    r = post(upload_token, _deep_json(2000), "application/json")
    assert r.status_code == 400 and b"not JSON" in r.content
    assert OtlpSpan.objects.filter(state="buffered").count() == 0


def _deep_json(depth: int) -> bytes:
    """OTLP/JSON with an attribute nested `depth` levels (built as text: orjson writes no
    deeper than it reads)."""
    inner = b'{"stringValue": "bottom"}'
    head = b'{"kvlistValue": {"values": [{"key": "k", "value": ' * depth
    tail = b"}]}}" * depth
    span = (
        b'{"traceId": "0000000000000000000000000000000a", "spanId": "000000000000000a",'
        b' "attributes": [{"key": "d", "value": ' + head + inner + tail + b"}]}"
    )
    return b'{"resourceSpans": [{"scopeSpans": [{"spans": [' + span + b"]}]}]}"


def test_ten_thousand_spans_in_one_request(project, upload_token, settings):
    body = request(10_000)
    assert post(upload_token, body).status_code == 200
    assert OtlpSpan.objects.filter(project=project).count() == 10_000
    (upload,) = finish_all(project)
    assert upload.status == "done" and upload.traces_accepted == 1
    settings.TA_OTLP_MAX_PENDING_SPANS = 5_000
    r = post(upload_token, request(10_000, trace=2))
    assert r.status_code == 413 and b"TA_OTLP_MAX_PENDING_SPANS" in r.content
    assert "Retry-After" not in r


@pytest.mark.parametrize(
    ("body", "headers", "message"),
    [
        (
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\xff" * 32,
            {"Content-Encoding": "gzip"},
            b"not valid gzip data",
        ),
        (gzip.compress(request(50))[:-20], {"Content-Encoding": "gzip"}, b"truncated"),
        (zlib.compress(request(3))[:10], {"Content-Encoding": "deflate"}, b"truncated"),
        (request(3), {"Content-Encoding": "br"}, b"unsupported Content-Encoding 'br'"),
    ],
)
def test_broken_compression_is_a_400_that_says_so(project, upload_token, body, headers, message):
    r = post(upload_token, body, **headers)
    assert r.status_code == 400 and message in r.content, r.content
    assert OtlpSpan.objects.count() == 0


@pytest.mark.parametrize(
    ("content_type", "body", "status"),
    [
        ("", None, 415),
        ("text/plain", None, 415),
        ("application/x-www-form-urlencoded", None, 415),
        ("application/json", None, 400),  # protobuf bytes labelled JSON
        (PB, b'{"resourceSpans": []}', 400),  # JSON labelled protobuf
    ],
)
def test_wrong_content_type(project, upload_token, content_type, body, status):
    r = Client().post(
        "/v1/traces",
        data=body if body is not None else request(2),
        content_type=content_type,
        HTTP_AUTHORIZATION=f"Bearer {upload_token}",
    )
    assert r.status_code == status, r.content
    assert OtlpSpan.objects.count() == 0


def test_nul_characters_are_stored_as_the_replacement_character(project, upload_token, alice):
    """jsonb cannot hold U+0000: the receiver stores U+FFFD, as the file import does, instead of
    failing the insert (an answer the exporter would retry forever)."""
    attrs = [KeyValue(key="input.value", value=AnyValue(string_value="a\x00b"))]
    r = post(upload_token, request(attrs=attrs))
    assert r.status_code == 200, r.content
    doc = otlp_json_request(attrs)
    assert post(upload_token, doc, "application/json").status_code == 200
    finish_all(project)
    inputs = {t.header["task"]["input"] for t in Trace.objects.filter(project=project)}
    assert inputs == {"a\ufffdb"}


def otlp_json_request(attrs: list[KeyValue]) -> bytes:
    req = ExportTraceServiceRequest.FromString(request(trace=3, attrs=attrs))
    from google.protobuf.json_format import MessageToDict

    doc = MessageToDict(req)
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["traceId"], span["spanId"] = "00000000000000000000000000000003", "0000000000000001"
    return orjson.dumps(doc)


def test_pending_limit_answers_429_with_retry_after_until_traces_complete(
    project, upload_token, settings
):
    settings.TA_OTLP_MAX_PENDING_SPANS = 10
    assert post(upload_token, request(6, trace=1)).status_code == 200
    r = post(upload_token, request(6, trace=2))
    assert r.status_code == 429 and int(r["Retry-After"]) >= 1
    assert b"TA_OTLP_MAX_PENDING_SPANS" in r.content and b"6 spans waiting" in r.content
    # Another project has a limit of its own.
    other = Project.objects.create(name="other")
    _t, theirs = ProjectToken.issue(project=other, name="agent")
    assert post(theirs, request(6, trace=2)).status_code == 200
    finish_all(project)  # the waiting trace completes: room again
    assert post(upload_token, request(6, trace=2)).status_code == 200
    assert Upload.objects.filter(project=project).count() == 1
