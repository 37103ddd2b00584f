"""The OTLP/HTTP receiver in process: requests encoded by the OTel SDK's own encoder, the
OTLP answers, the span buffer (retries, order, tenancy) and completion into a trace equal to a
file upload of the same spans. The real exporter against a running server and worker:
tests/integration/test_otlp_receiver_live.py."""

from __future__ import annotations

import gzip
import re
from datetime import timedelta

import orjson
import pytest
from django.test import Client
from django.utils import timezone
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.importers.otlp_samples import openinference_spans, otlp_json
from traces.models import Event, Project, ProjectToken, Trace, Upload
from traces.otlp_receiver.models import OtlpSpan
from traces.otlp_receiver.store import Outcome, trace_finish, traces_sweep
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db

PB = "application/x-protobuf"


@pytest.fixture(autouse=True)
def _no_broker(monkeypatch):  # type: ignore[no-untyped-def]
    """Completion checks are recorded, not queued: these tests finish traces themselves."""
    queued: list[tuple[int, str]] = []
    monkeypatch.setattr(
        "traces.otlp_receiver.tasks.finish_later",
        lambda p, ts: queued.extend((p, t) for t in ts) or True,
    )
    return queued


@pytest.fixture(scope="module")
def spans():  # type: ignore[no-untyped-def]
    return openinference_spans()


def post(token: str, body: bytes, content_type: str = PB, **headers: str):  # type: ignore[no-untyped-def]
    extra = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()}
    return Client().post(
        "/v1/traces",
        data=body,
        content_type=content_type,
        HTTP_AUTHORIZATION=f"Bearer {token}",
        **extra,
    )


def proto(spans) -> bytes:  # type: ignore[no-untyped-def]
    return encode_spans(spans).SerializeToString()


def events_of(project: Project) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for t in Trace.objects.filter(project=project):
        out[t.external_id] = list(
            Event.objects.filter(trace=t).order_by("seq").values_list("payload", flat=True)
        )
    return out


def finish_all(project: Project) -> list[Upload]:
    uploads = []
    for trace_id in set(
        OtlpSpan.objects.filter(project=project).values_list("trace_id", flat=True)
    ):
        assert trace_finish(project.pk, trace_id, force=True) is Outcome.IMPORTED
    for up in Upload.objects.filter(project=project, source=Upload.Source.OTLP):
        uploads.append(upload_process(upload_id=up.pk))
    return uploads


def file_upload(alice, spans) -> dict[str, list[dict]]:  # type: ignore[no-untyped-def]
    other = Project.objects.create(name="file-upload", created_by=alice)
    up, _ = upload_create(
        project=other, fileobj=otlp_json(spans), filename="spans.json", source="api"
    )
    upload_process(upload_id=up.pk)
    return events_of(other)


@pytest.mark.parametrize("encoding", ["protobuf", "json", "protobuf-gzip", "json-gzip"])
def test_spans_become_the_traces_a_file_upload_gives(
    encoding, spans, project, upload_token, alice, _no_broker
):
    body, ctype = (
        (proto(spans), PB)
        if encoding.startswith("protobuf")
        else (
            otlp_json(spans),
            "application/json",
        )
    )
    headers = {}
    if encoding.endswith("gzip"):
        body, headers = gzip.compress(body), {"Content-Encoding": "gzip"}
    r = post(upload_token, body, ctype, **headers)
    assert r.status_code == 200, r.content
    assert r["Content-Type"] == ctype
    if ctype == PB:
        assert not ExportTraceServiceResponse.FromString(r.content).HasField("partial_success")
    else:
        assert orjson.loads(r.content) == {}
    assert OtlpSpan.objects.filter(project=project).count() == len(spans)
    # Each trace's root span came: its completion check is queued.
    assert {t for _p, t in _no_broker} == {f"{s.context.trace_id:032x}" for s in spans}
    uploads = finish_all(project)
    assert all(u.status == "done" and u.traces_accepted == 1 for u in uploads)
    got = events_of(project)
    assert len(got) == 2 and got == file_upload(alice, spans)
    # the spans' times, token counts and cost, summed per trace as a file upload's are
    for trace in Trace.objects.filter(project=project):
        assert (trace.total_tokens, trace.cost_usd) == (299, 0.00046)
        assert trace.duration_ms > 0 and trace.started_at is not None


def test_a_retried_request_is_stored_once_and_order_does_not_matter(
    spans, project, upload_token, alice
):
    # Children after their root, one span per request, and every request sent twice.
    for span in reversed(spans):
        for _ in range(2):
            assert post(upload_token, proto([span])).status_code == 200
    assert OtlpSpan.objects.filter(project=project).count() == len(spans)
    finish_all(project)
    assert events_of(project) == file_upload(alice, spans)


def test_completion_waits_for_the_root_span_or_quiet_time(spans, project, upload_token, settings):
    settings.TA_OTLP_GRACE_SECONDS = 5
    settings.TA_OTLP_QUIET_SECONDS = 60
    children = [s for s in spans if s.parent is not None]
    roots = [s for s in spans if s.parent is None]
    assert post(upload_token, proto(children)).status_code == 200
    paris = f"{roots[0].context.trace_id:032x}"
    assert trace_finish(project.pk, paris) is Outcome.WAIT
    assert traces_sweep() == []
    assert post(upload_token, proto(roots[:1])).status_code == 200
    assert trace_finish(project.pk, paris) is Outcome.WAIT  # within the grace time
    OtlpSpan.objects.update(received_at=OtlpSpan.objects.first().received_at - timedelta(seconds=6))
    assert traces_sweep() == [paris]  # root ended, then quiet for the grace time
    OtlpSpan.objects.filter(state="buffered").update(
        received_at=OtlpSpan.objects.first().received_at - timedelta(seconds=61)
    )
    (atlantis,) = traces_sweep()  # no root span, but quiet for TA_OTLP_QUIET_SECONDS
    assert atlantis == f"{roots[1].context.trace_id:032x}"
    assert trace_finish(project.pk, paris) is Outcome.NOTHING
    # A span of an imported trace arriving afterwards is kept, marked, not imported again.
    assert post(upload_token, proto(roots[:1])).status_code == 200  # a retry: nothing new
    assert traces_sweep() == []
    doc = orjson.loads(otlp_json(roots[:1]))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = "00000000000000ab"
    assert post(upload_token, orjson.dumps(doc), "application/json").status_code == 200
    assert trace_finish(project.pk, paris, force=True) is Outcome.LATE
    assert OtlpSpan.objects.get(span_id="00000000000000ab").state == "late"
    assert Upload.objects.filter(project=project).count() == 2


def test_partial_success_for_spans_without_ids(project, upload_token, spans):
    doc = orjson.loads(otlp_json(spans[:2]))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = "xyz"
    r = post(upload_token, orjson.dumps(doc), "application/json")
    assert r.status_code == 200
    assert orjson.loads(r.content)["partialSuccess"]["rejectedSpans"] == 1
    assert OtlpSpan.objects.filter(project=project).count() == 1


@pytest.mark.parametrize(
    ("body", "ctype", "headers", "status"),
    [
        (b"\xff\xfe not protobuf", PB, {}, 400),
        (b"[1, 2", "application/json", {}, 400),
        (b"plain", PB, {"Content-Encoding": "gzip"}, 400),
        (b"{}", "text/plain", {}, 415),
    ],
)
def test_undecodable_bodies(project, upload_token, body, ctype, headers, status):
    r = post(upload_token, body, ctype, **headers)
    assert r.status_code == status
    assert OtlpSpan.objects.count() == 0


def test_tokens_and_tenancy(project, upload_token, spans, alice):
    assert post("ta_made_up", proto(spans)).status_code == 401
    r = Client().post("/v1/traces", data=proto(spans), content_type=PB)
    assert r.status_code == 401 and r["WWW-Authenticate"] == "Bearer"
    _t, read = ProjectToken.issue(project=project, name="r", scope=ProjectToken.Scope.READ)
    assert post(read, proto(spans)).status_code == 403
    other = Project.objects.create(name="other", created_by=alice)
    _t, theirs = ProjectToken.issue(project=other, name="o")
    assert post(theirs, proto(spans)).status_code == 200
    assert post(upload_token, proto(spans)).status_code == 200  # the same ids, another project
    assert OtlpSpan.objects.filter(project=other).count() == len(spans)
    assert OtlpSpan.objects.filter(project=project).count() == len(spans)


def test_size_limit_sent_and_decompressed(project, upload_token, settings, spans):
    settings.TA_OTLP_MAX_BODY_BYTES = 1000
    big = orjson.dumps({"resourceSpans": [], "pad": "x" * 5000})
    assert post(upload_token, big, "application/json").status_code == 413
    bomb = gzip.compress(big)
    assert len(bomb) < 1000
    r = post(upload_token, bomb, "application/json", **{"Content-Encoding": "gzip"})
    assert r.status_code == 413
    assert post(upload_token, b"{}", "application/json").status_code == 200


def test_database_down_and_throttled_tokens_answer_with_retry_after(
    project, upload_token, spans, monkeypatch
):
    from django.db import OperationalError

    def down(*_a):  # type: ignore[no-untyped-def]
        raise OperationalError("connection refused")

    monkeypatch.setattr("traces.otlp_receiver.views.spans_insert", down)
    r = post(upload_token, proto(spans))
    assert r.status_code == 503 and int(r["Retry-After"]) >= 1
    monkeypatch.undo()
    # Guessing tokens from one address: 429 with Retry-After, which exporters honour.
    codes = [post(f"ta_guess{i}", proto(spans)).status_code for i in range(30)]
    assert codes[0] == 401 and codes[-1] == 429
    r = post("ta_guess_again", proto(spans))
    assert r.status_code == 429 and int(r["Retry-After"]) >= 1
    assert post(upload_token, proto(spans)).status_code == 200  # a valid token still passes


def test_a_completion_task_takes_the_other_complete_traces_of_its_project(
    spans, project, upload_token, alice, settings
):
    """Workers behind: when the task of the first request runs, the second request's trace is
    complete too and joins its upload; the second task then finds nothing. Another project's
    complete trace is not taken."""
    from traces.otlp_receiver.tasks import otlp_finish_traces

    settings.TA_OTLP_GRACE_SECONDS = 5
    paris, atlantis = (f"{s.context.trace_id:032x}" for s in spans if s.parent is None)
    for trace_id in (paris, atlantis):
        assert (
            post(
                upload_token, proto([s for s in spans if f"{s.context.trace_id:032x}" == trace_id])
            ).status_code
            == 200
        )
    other = Project.objects.create(name="other", created_by=alice)
    _t, theirs = ProjectToken.issue(project=other, name="o")
    assert post(theirs, proto(spans)).status_code == 200
    assert otlp_finish_traces(project.pk, [paris]) == {paris: "wait"}  # within the grace time
    OtlpSpan.objects.update(received_at=timezone.now() - timedelta(seconds=6))
    assert otlp_finish_traces(project.pk, [paris]) == {paris: "imported", atlantis: "imported"}
    assert otlp_finish_traces(project.pk, [atlantis]) == {atlantis: "nothing"}
    (upload,) = Upload.objects.filter(project=project)
    assert not OtlpSpan.objects.filter(project=project, state="buffered").exists()
    assert OtlpSpan.objects.filter(project=other, state="buffered").count() == len(spans)
    assert upload_process(upload_id=upload.pk).traces_accepted == 2
    assert events_of(project) == file_upload(alice, spans)


def test_an_upload_takes_other_traces_up_to_its_span_limit(spans, project, upload_token, settings):
    """TA_OTLP_UPLOAD_MAX_SPANS bounds what joins a completion task's upload: with room for
    the task's own trace only, the other complete trace waits for its own task; the sweep
    still imports one trace an upload when a single trace passes the limit."""
    from traces.otlp_receiver.tasks import otlp_finish_traces

    settings.TA_OTLP_GRACE_SECONDS = 0
    by_trace: dict[str, list] = {}
    for s in spans:
        by_trace.setdefault(f"{s.context.trace_id:032x}", []).append(s)
    (paris, n_paris), (atlantis, _n) = ((t, len(ss)) for t, ss in by_trace.items())
    assert post(upload_token, proto(spans)).status_code == 200
    settings.TA_OTLP_UPLOAD_MAX_SPANS = n_paris
    assert otlp_finish_traces(project.pk, [paris]) == {paris: "imported"}
    settings.TA_OTLP_UPLOAD_MAX_SPANS = n_paris + len(by_trace[atlantis])
    OtlpSpan.objects.filter(trace_id=paris).update(state="buffered", upload=None)
    Upload.objects.filter(project=project).delete()
    assert otlp_finish_traces(project.pk, [paris]) == {paris: "imported", atlantis: "imported"}
    OtlpSpan.objects.update(state="buffered", upload=None)
    Upload.objects.filter(project=project).delete()
    settings.TA_OTLP_UPLOAD_MAX_SPANS = 1
    assert len(traces_sweep()) == 1 and len(traces_sweep()) == 1
    assert Upload.objects.filter(project=project).count() == 2
    assert not OtlpSpan.objects.filter(project=project, state="buffered").exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("second", ["same traces", "one of them"])
def test_two_workers_finishing_the_same_traces_make_one_upload(
    postgres, spans, project, upload_token, settings, second
):
    """The first worker holds its marked spans uncommitted while the second finishes the same
    traces (the same upload's content) or one of them (another upload's): the second waits,
    then finds the spans taken, and its upload is undone."""
    import threading
    import time

    from django.db import connection, transaction

    from traces.otlp_receiver.store import traces_finish

    settings.TA_OTLP_GRACE_SECONDS = 0
    assert post(upload_token, proto(spans)).status_code == 200
    traces = sorted({f"{s.context.trace_id:032x}" for s in spans})
    marked = threading.Event()
    first: dict = {}

    def worker() -> None:
        try:
            with transaction.atomic():
                first.update(traces_finish(project.pk, traces))
                marked.set()
                time.sleep(1)
        finally:
            marked.set()
            connection.close()

    thread = threading.Thread(target=worker)
    thread.start()
    assert marked.wait(30)
    mine = traces if second == "same traces" else traces[:1]
    assert traces_finish(project.pk, mine) == dict.fromkeys(mine, Outcome.NOTHING)
    thread.join(30)
    assert first == dict.fromkeys(traces, Outcome.IMPORTED)
    (upload,) = Upload.objects.filter(project=project)
    assert set(OtlpSpan.objects.filter(project=project).values_list("upload", "state")) == {
        (upload.pk, "imported")
    }
    assert upload.size > 0


def test_deleting_a_receiver_upload_unlinks_its_spans(spans, project, upload_token):
    """The spans' link to their upload has no database-level key: deleting the upload leaves
    no span naming it."""
    from traces.upload_manage import upload_delete

    assert post(upload_token, proto(spans)).status_code == 200
    upload, other = finish_all(project)  # a trace each
    mine = set(OtlpSpan.objects.filter(upload=upload).values_list("pk", flat=True))
    theirs = set(OtlpSpan.objects.filter(upload=other).values_list("pk", flat=True))
    assert mine and theirs and len(mine | theirs) == len(spans)
    upload_delete(upload=upload)
    assert not Upload.objects.filter(pk=upload.pk).exists()
    assert Trace.objects.filter(project=project).count() == 1
    assert set(OtlpSpan.objects.filter(pk__in=mine).values_list("upload", "state")) == {
        (None, "imported")
    }
    assert set(OtlpSpan.objects.filter(upload=other).values_list("pk", flat=True)) == theirs


def test_the_project_page_names_the_receiver_s_latest_upload(
    client, spans, project, upload_token, alice
):
    assert post(upload_token, proto(spans)).status_code == 200
    client.force_login(alice)
    page = client.get(project.get_absolute_url()).content.decode()
    assert f'data-spans="{len(spans)}"' in page and 'id="receiver-latest"' not in page
    uploads = finish_all(project)
    page = client.get(project.get_absolute_url()).content.decode()
    assert 'data-spans="0"' in page and "No spans wait" in page
    latest = max(uploads, key=lambda u: (u.created_at, u.pk))
    assert re.search(rf'id="receiver-latest">.*{re.escape(latest.filename)}.*1 trace,', page)


def test_a_file_with_a_span_time_past_any_date_imports_and_shows(client, project, alice):
    """A malformed span time (2.5e20 ns: past the year 9999 and past 64 bits) is kept and
    flagged, the upload is done, and the trace page shows the trace with that step untimed."""
    from tests.importers.otlp_samples import openinference_spans

    doc = orjson.loads(otlp_json(openinference_spans(("Paris",))))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    next(s for s in spans if s["name"] == "ChatCompletion")["startTimeUnixNano"] = (
        "253402300800000000000"
    )
    up, _ = upload_create(
        project=project, fileobj=orjson.dumps(doc), filename="bad-time.json", source="api"
    )
    up = upload_process(upload_id=up.pk)
    assert up.status == "done" and up.traces_accepted == 1 and up.error_count == 0
    assert up.report["flags"]["timestamp_unreadable"] == 1
    (trace,) = Trace.objects.filter(project=project)
    client.force_login(alice)
    page = client.get(f"/traces/{trace.pk}/")
    assert page.status_code == 200 and b"253402300800000000000" in page.content


def test_openllmetry_spans_through_the_receiver_equal_their_file_upload(
    project, upload_token, alice
):
    """OpenLLMetry's real OpenAI instrumentation (OTel GenAI message attributes), sent as the
    SDK's protobuf: the traces equal a file upload of the same spans, messages and all."""
    from tests.importers.genai_samples import openllmetry_spans

    spans = openllmetry_spans()
    assert post(upload_token, proto(spans)).status_code == 200
    finish_all(project)
    got = events_of(project)
    assert got == file_upload(alice, spans)
    [events] = got.values()
    assert [e["type"] for e in events].count("tool_call") == 1
    assert events[-1]["content"] == "It is 18C and sunny in Paris."
