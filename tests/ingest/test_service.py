"""The ingest service, run in-process (the same function the worker runs)."""

from __future__ import annotations

import gzip

import pytest

from tests.builders.v1 import gz, header, jsonl, simple_trace
from traces.models import Event, Trace, Upload
from traces.services import UploadRejected, upload_create, upload_process

pytestmark = pytest.mark.django_db


def ingest(project, data: bytes, name: str = "t.jsonl", fmt: str = "v1") -> Upload:  # type: ignore[no-untyped-def]
    upload, created = upload_create(
        project=project,
        fileobj=data,
        filename=name,
        fmt=fmt,
        source=Upload.Source.CLI,
        enqueue=False,
    )
    assert created
    result = upload_process(upload_id=upload.pk)
    assert result is not None
    return result


def test_stores_traces_and_events_in_order(project):
    up = ingest(project, jsonl(simple_trace("a") + simple_trace("b")))
    assert (up.status, up.traces_accepted, up.traces_rejected, up.events) == ("done", 2, 0, 14)
    t = Trace.objects.get(external_id="a")
    assert (t.model, t.benchmark, t.category, t.task_id, t.outcome_success) == (
        "m-1",
        "bench",
        "cat",
        "task-a",
        True,
    )
    assert list(Event.objects.filter(trace=t).order_by("seq").values_list("type", flat=True)) == [
        "trace",
        "message",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "message",
    ]


def test_interleaved_traces_are_grouped(project):
    a, b = simple_trace("a"), simple_trace("b")
    mixed = [e for pair in zip(a, b, strict=True) for e in pair]
    up = ingest(project, jsonl(mixed))
    assert up.traces_accepted == 2
    assert Event.objects.filter(trace__external_id="b").count() == len(b)


def test_payload_kept_verbatim_with_unknown_fields(project):
    ev = {
        "trace_id": "a",
        "type": "tool_call",
        "name": "f",
        "arguments": {"x": "a\tb\\c\n"},
        "vendor_field": {"deep": [1, 2]},
        "meta": {"k": "<script>alert(1)</script>"},
    }
    ingest(project, jsonl([header("a"), ev, {"trace_id": "a", "type": "brand_new_type", "z": 1}]))
    stored = Event.objects.get(trace__external_id="a", seq=1).payload
    assert stored == ev
    assert Event.objects.get(trace__external_id="a", seq=2).payload["type"] == "brand_new_type"


def test_bad_line_rejects_its_trace_whole_and_keeps_the_others(project):
    bad = simple_trace("bad")
    bad[3] = {"trace_id": "bad", "type": "tool_call", "name": "f", "arguments": "oops"}
    up = ingest(project, jsonl(simple_trace("good") + bad))
    assert (up.traces_accepted, up.traces_rejected, up.error_count) == (1, 1, 1)
    assert up.errors == [
        {
            "line": 11,
            "trace_id": "bad",
            "path": "$.arguments",
            "message": "expected an object (parsed arguments, not a JSON string), "
            'found a string "oops"',
        }
    ]
    assert not Trace.objects.filter(external_id="bad").exists()


def test_unparsable_line_with_readable_trace_id_rejects_that_trace(project):
    data = (
        jsonl(simple_trace("a"))
        + b'{"trace_id": "a", "type": "message", "role": \n'
        + jsonl(simple_trace("b"))
    )
    up = ingest(project, data)
    assert up.traces_accepted == 1 and up.errors[0]["trace_id"] == "a" and up.errors[0]["line"] == 8
    assert Trace.objects.filter(external_id="b").exists()


def test_seq_orders_events_and_duplicates_are_errors(project):
    events = [dict(e, seq=10 - i) for i, e in enumerate(simple_trace("a"))]
    events[0]["seq"] = 100  # header must come first: now it is last
    up = ingest(project, jsonl(events))
    assert up.traces_rejected == 1 and "must be the first event" in up.errors[0]["message"]


def test_seq_given_on_some_events_only_is_an_error(project):
    events = simple_trace("a")
    events[2]["seq"] = 5
    up = ingest(project, jsonl(events))
    assert up.traces_rejected == 1 and up.errors[0]["path"] == "$.seq"


def test_duplicate_seq(project):
    events = [dict(e, seq=i) for i, e in enumerate(simple_trace("a"))]
    events[3]["seq"] = 2
    up = ingest(project, jsonl(events))
    assert "used twice" in up.errors[0]["message"]


def test_second_header_rejected(project):
    up = ingest(project, jsonl(simple_trace("a") + [header("a")]))
    assert up.traces_rejected == 1 and "second trace header" in up.errors[0]["message"]


def test_identical_reupload_is_a_no_op(project):
    data = jsonl(simple_trace("a"))
    first = ingest(project, data)
    again, created = upload_create(
        project=project,
        fileobj=data,
        filename="other-name.jsonl",
        fmt="v1",
        source=Upload.Source.API,
        enqueue=False,
    )
    assert not created and again.pk == first.pk
    assert Upload.objects.count() == 1 and Trace.objects.count() == 1


def test_trace_id_already_in_project_is_reported(project):
    ingest(project, jsonl(simple_trace("a")))
    up = ingest(project, jsonl(simple_trace("a", n_calls=3) + simple_trace("b")))
    assert up.traces_accepted == 1 and up.traces_rejected == 1
    assert "already stored in this project" in up.errors[0]["message"]


def test_raw_file_always_kept(project):
    data = b"this is not json\n"
    up = ingest(project, data)
    assert up.traces_accepted == 0 and up.error_count == 1
    with up.file.open("rb") as fh:
        assert fh.read() == data


def test_gzip_upload(project):
    up = ingest(project, gz(jsonl(simple_trace("a"))), name="t.jsonl.gz")
    assert up.traces_accepted == 1


def test_gzip_bomb_fails_with_its_own_message(project, settings):
    settings.TA_MAX_GZIP_RATIO = 10.0
    up = ingest(project, gzip.compress(b" " * (20 << 20)), name="bomb.gz")
    assert up.status == "failed" and "TA_MAX_GZIP_RATIO" in up.failure
    assert Trace.objects.count() == 0


def test_decompressed_size_limit_fails_with_its_own_message(project, settings):
    settings.TA_MAX_DECOMPRESSED_BYTES = 1000
    up = ingest(project, gz(jsonl(simple_trace("a", n_calls=20))), name="big.gz")
    assert up.status == "failed" and "TA_MAX_DECOMPRESSED_BYTES" in up.failure


def test_file_size_limit(project, settings):
    settings.TA_MAX_UPLOAD_BYTES = 100
    with pytest.raises(UploadRejected, match="TA_MAX_UPLOAD_BYTES") as exc:
        upload_create(
            project=project, fileobj=b"x" * 101, filename="a", source="cli", enqueue=False
        )
    assert exc.value.status == 413
    assert Upload.objects.count() == 0


def test_line_length_limit(project, settings):
    settings.TA_MAX_LINE_BYTES = 200
    events = simple_trace("a")
    events[1]["content"] = "x" * 500
    up = ingest(project, jsonl(events + simple_trace("b")))
    assert up.traces_accepted == 1
    err = up.errors[0]
    assert err["line"] == 2 and "TA_MAX_LINE_BYTES" in err["message"]
    # The trace id is read from the start of the over-long line, so its trace is rejected whole.
    assert err["trace_id"] == "a"
    assert not Trace.objects.filter(external_id="a").exists()


def test_depth_limit(project, settings):
    settings.TA_MAX_DEPTH = 5
    events = simple_trace("a")
    events[1]["meta"] = {"a": {"b": {"c": {"d": {"e": 1}}}}}
    up = ingest(project, jsonl(events))
    assert up.traces_rejected == 1 and "TA_MAX_DEPTH" in up.errors[0]["message"]


def test_events_per_trace_limit(project, settings):
    settings.TA_MAX_EVENTS_PER_TRACE = 5
    up = ingest(project, jsonl(simple_trace("a", n_calls=5) + simple_trace("b", n_calls=1)))
    assert up.traces_accepted == 1 and "TA_MAX_EVENTS_PER_TRACE" in up.errors[0]["message"]


def test_invalid_utf8_kept_with_warning(project):
    data = jsonl(simple_trace("a")).replace(b"do it", b"do \xff it")
    up = ingest(project, data)
    assert up.traces_accepted == 1 and "invalid UTF-8" in up.warnings[0]["message"]


def test_error_report_is_capped_but_counted(project, settings):
    settings.TA_MAX_REPORTED_ERRORS = 3
    up = ingest(project, b"nope\n" * 10)
    assert up.error_count == 10 and len(up.errors) == 3


def test_empty_file_rejected(project):
    with pytest.raises(UploadRejected, match="empty"):
        upload_create(project=project, fileobj=b"", filename="a", source="cli", enqueue=False)


def test_unknown_format_rejected(project):
    with pytest.raises(UploadRejected, match="unknown format"):
        upload_create(
            project=project, fileobj=b"x", filename="a", fmt="xml", source="cli", enqueue=False
        )


def test_processing_twice_does_nothing_the_second_time(project):
    up = ingest(project, jsonl(simple_trace("a")))
    assert upload_process(upload_id=up.pk) is None
    assert Event.objects.count() == 7


def test_many_traces_across_batches(project, settings):
    settings.TA_INGEST_BATCH_EVENTS = 50
    events = [e for i in range(40) for e in simple_trace(f"t{i}")]
    up = ingest(project, jsonl(events))
    assert up.traces_accepted == 40 and Event.objects.count() == 40 * 7


def test_events_are_append_only(project):
    from django.db import DatabaseError, transaction

    ingest(project, jsonl(simple_trace("a")))
    ev = Event.objects.first()
    with pytest.raises(ValueError):
        ev.save()
    with pytest.raises(DatabaseError), transaction.atomic():
        Event.objects.filter(pk=ev.pk).update(seq=99)


def test_auto_detects_v1(project):
    up = ingest(project, jsonl(simple_trace("a")), fmt="auto")
    assert up.format_detected == "v1" and up.traces_accepted == 1


@pytest.mark.parametrize("name", ["a" * 251 + ".jsonl", "é" * 250 + ".jsonl", "ü" * 255])
def test_a_long_file_name_uploaded_twice_is_stored_twice(project, token, name):
    """The stored file is named by its content's hash: a 255-character (or 255 multi-byte
    character) name, sent twice with different contents, is two uploads keeping the name."""
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    for i in range(2):
        r = api.post(
            "/api/uploads/",
            {"file": _named(jsonl(simple_trace(f"long-{i}")), name)},
            format="multipart",
        )
        assert r.status_code == 202, r.content
    names = list(Upload.objects.values_list("filename", flat=True))
    assert len(names) == 2 and len(set(names)) == 1 and len(names[0]) <= 255


def _named(data: bytes, name: str):  # type: ignore[no-untyped-def]
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/x-ndjson")
