"""The receiver's backlog limits: spans and bytes waiting in a project's buffer, counted by the
statements that buffer and import spans, checked with one row read a request, and counted
again by the sweep. A sender that fills the buffer with a few huge spans is held off by the
byte limit as one that sends many small spans is by the span limit."""

from __future__ import annotations

import orjson
import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tests.ingest.test_otlp_receiver import finish_all, post
from tests.security.test_otlp_receiver_attacks import request
from traces.otlp_receiver.backlog import backlog
from traces.otlp_receiver.models import OtlpBacklog, OtlpSpan
from traces.otlp_receiver.store import traces_sweep

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_broker(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr("traces.otlp_receiver.tasks.finish_later", lambda p, ts: True)


def stored(project_id: int) -> tuple[int, int]:
    """The buffered spans and their bytes as compact JSON text, counted from the buffer."""
    rows = OtlpSpan.objects.filter(project_id=project_id, state="buffered")
    size = sum(
        len(orjson.dumps(r.resource)) + len(orjson.dumps(r.scope)) + len(orjson.dumps(r.span))
        for r in rows
    )
    return rows.count(), size


def big(n: int, *, trace: int, kib: int) -> bytes:
    return request(
        n,
        trace=trace,
        attrs=[KeyValue(key="output.value", value=AnyValue(string_value="x" * 1024 * kib))],
    )


def test_the_backlog_follows_the_buffer(project, upload_token):
    assert backlog(project.pk) == (0, 0)
    assert post(upload_token, request(5, trace=1)).status_code == 200
    assert post(upload_token, request(3, trace=2)).status_code == 200
    assert backlog(project.pk) == stored(project.pk) and backlog(project.pk)[0] == 8
    assert post(upload_token, request(5, trace=1)).status_code == 200  # a retry stores nothing
    assert backlog(project.pk) == stored(project.pk) and backlog(project.pk)[0] == 8
    finish_all(project)
    assert backlog(project.pk) == (0, 0)
    # A span of an imported trace is kept, marked late, and leaves the backlog when found.
    late = request(7, trace=2)
    assert post(upload_token, late).status_code == 200
    assert backlog(project.pk)[0] == 4  # spans 4-7 of trace 2 are new
    from traces.otlp_receiver.store import trace_finish

    trace_finish(project.pk, f"{2:032x}", force=True)
    assert OtlpSpan.objects.filter(project=project, state="late").count() == 4
    assert backlog(project.pk) == (0, 0) == stored(project.pk)


def test_the_byte_limit_holds_off_large_spans_until_traces_complete(
    project, upload_token, settings
):
    assert post(upload_token, big(4, trace=1, kib=64)).status_code == 200
    waiting = backlog(project.pk)[1]
    assert waiting > 4 * 64 * 1024
    settings.TA_OTLP_MAX_PENDING_BYTES = waiting + 100 * 1024
    r = post(upload_token, big(4, trace=2, kib=64))
    assert r.status_code == 429 and b"TA_OTLP_MAX_PENDING_BYTES" in r.content, r.content
    assert int(r["Retry-After"]) >= 1
    assert backlog(project.pk)[1] == waiting  # nothing of the refused request was stored
    finish_all(project)
    assert post(upload_token, big(4, trace=2, kib=64)).status_code == 200
    # A request that could never fit: 413, and the exporter does not retry it.
    r = post(upload_token, big(4, trace=3, kib=256))
    assert r.status_code == 413 and b"TA_OTLP_MAX_PENDING_BYTES" in r.content, r.content
    assert "Retry-After" not in r


def test_the_sweep_counts_a_drifted_backlog_again(project, upload_token, alice):
    assert post(upload_token, request(6, trace=1)).status_code == 200
    right = backlog(project.pk)
    OtlpBacklog.objects.filter(project=project).update(spans=10**9, bytes=10**15)
    assert post(upload_token, request(2, trace=9)).status_code == 429
    traces_sweep()  # nothing is complete yet: only the counts change
    assert backlog(project.pk) == right
    OtlpSpan.objects.filter(project=project).delete()  # spans gone by hand
    traces_sweep()
    assert backlog(project.pk) == (0, 0)


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_and_retries_count_each_stored_span_once(
    postgres, project, upload_token
):
    """Eight senders at once, each sending its request twice (an exporter's retry racing its
    first attempt): every span is stored once and counted once."""
    import threading

    from django.db import connection as conn

    bodies = [request(50, trace=t) for t in range(1, 9)]
    answers: list[int] = []

    def send(body: bytes) -> None:
        try:
            answers.append(post(upload_token, body).status_code)
        finally:
            conn.close()

    threads = [threading.Thread(target=send, args=(b,)) for b in bodies + bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert answers == [200] * 16
    assert backlog(project.pk) == stored(project.pk) and backlog(project.pk)[0] == 400
