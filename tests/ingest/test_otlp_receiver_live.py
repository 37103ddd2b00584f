"""The OTLP/HTTP receiver with the real clients against a running server and a real Celery
worker: the OTel SDK's OTLP/HTTP exporter (protobuf; and JSON through the same client with the
SDK's own encoder, as the Python exporter sends protobuf only) and an OpenInference-instrumented
OpenAI client talking to the scripted OpenAI-compatible server. Each trace found in the project
has the events a file upload of the same spans gives."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import WorkerProcess, _db_url, wait_for
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.importers.otlp_samples import langfuse_spans, openinference_spans, otlp_json
from traces.models import Event, Project, Trace, Upload
from traces.otlp_receiver.models import OtlpSpan
from traces.services import upload_create

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


class JSONSpanExporter(OTLPSpanExporter):
    """The SDK's exporter and HTTP client sending OTLP/JSON (hex ids), encoded by the SDK's
    own encoder."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self._client.export(otlp_json(list(spans)))
        return SpanExportResult.SUCCESS if result.success else SpanExportResult.FAILURE


@pytest.fixture(scope="module")
def worker(postgres, redis_broker, _media_root, tmp_path_factory):  # type: ignore[no-untyped-def]
    """A worker of its own (as `celery_worker_process`) with short completion times and a
    sweep every second."""
    env = dict(
        os.environ,
        DATABASE_URL=_db_url(postgres),
        CELERY_BROKER_URL=redis_broker,
        TA_MEDIA_ROOT=str(_media_root),
        DJANGO_SETTINGS_MODULE="auditor.settings",
        TA_OTLP_GRACE_SECONDS="1",
        TA_OTLP_QUIET_SECONDS="3",
        TA_SWEEP_SECONDS="1",
    )
    proc = WorkerProcess(env, tmp_path_factory.mktemp("otlp-worker") / "worker.log")
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture
def receiver(live_server, project, upload_token, settings):  # type: ignore[no-untyped-def]
    settings.TA_OTLP_GRACE_SECONDS = 1
    return f"{live_server.url}/v1/traces", upload_token


def exporter(receiver, encoding: str = "protobuf", gzip: bool = False, token: str | None = None):  # type: ignore[no-untyped-def]
    url, raw = receiver
    headers = {"authorization": f"Bearer {token or raw}"}
    cls = OTLPSpanExporter
    if encoding == "json":
        cls, headers["content-type"] = JSONSpanExporter, "application/json"
    return cls(
        endpoint=url,
        headers=headers,
        compression=Compression.Gzip if gzip else Compression.NoCompression,
        timeout=10,
    )


def events_of(project: Project) -> dict[str, list[dict]]:
    return {
        t.external_id: list(
            Event.objects.filter(trace=t).order_by("seq").values_list("payload", flat=True)
        )
        for t in Trace.objects.filter(project=project)
    }


def file_upload(project: Project, spans: Sequence[ReadableSpan]) -> dict[str, list[dict]]:
    """The same spans as an OTLP/JSON file, uploaded to another project and processed by the
    same worker."""
    other = Project.objects.create(name=f"file-{project.name}", created_by=project.created_by)
    up, _ = upload_create(
        project=other, fileobj=otlp_json(list(spans)), filename="spans.json", source="api"
    )
    wait_for(lambda: Upload.objects.get(pk=up.pk).is_finished, timeout=60)
    return events_of(other)


def imported(project: Project, n: int) -> bool:
    """n traces stored, every span imported, every upload of them done (traces completed
    together share an upload)."""
    uploads = Upload.objects.filter(project=project, source="otlp")
    return (
        Trace.objects.filter(project=project).count() == n
        and not OtlpSpan.objects.filter(project=project, state="buffered").exists()
        and uploads.exists()
        and not uploads.exclude(status="done").exists()
    )


@pytest.mark.parametrize(
    ("encoding", "gzip"), [("protobuf", False), ("protobuf", True), ("json", False)]
)
def test_sdk_exporter_spans_become_the_traces_of_a_file_upload(
    worker, receiver, project, encoding, gzip
):
    spans = openinference_spans()
    exp = exporter(receiver, encoding, gzip)
    # Out of order and in small requests: children first, each trace's root last; one request
    # sent twice (an exporter's retry).
    ordered = [s for s in spans if s.parent] + [s for s in spans if not s.parent]
    for i in range(0, len(ordered), 3):
        assert exp.export(ordered[i : i + 3]) is SpanExportResult.SUCCESS
    assert exp.export(ordered[:3]) is SpanExportResult.SUCCESS
    assert OtlpSpan.objects.filter(project=project).count() == len(spans)
    wait_for(lambda: imported(project, 2), timeout=60)
    assert events_of(project) == file_upload(project, spans)
    assert OtlpSpan.objects.filter(project=project, state="imported").count() == len(spans)


def test_killing_the_worker_mid_stream_loses_and_duplicates_nothing(worker, receiver, project):
    spans = openinference_spans(("Paris", "Atlantis", "Lima"))
    exp = exporter(receiver)
    half = len(spans) // 2
    assert exp.export(spans[:half]) is SpanExportResult.SUCCESS
    worker.kill()
    assert exp.export(spans[half:]) is SpanExportResult.SUCCESS
    assert exp.export(spans[half:]) is SpanExportResult.SUCCESS  # retried
    worker.start()
    wait_for(lambda: imported(project, 3), timeout=90)
    assert events_of(project) == file_upload(project, spans)


def test_a_trace_without_root_span_completes_when_quiet(worker, receiver, project):
    spans = [s for s in openinference_spans(("Paris",)) if s.parent]
    assert exporter(receiver).export(spans) is SpanExportResult.SUCCESS
    assert not imported(project, 1)
    wait_for(lambda: imported(project, 1), timeout=60)  # TA_OTLP_QUIET_SECONDS=3, sweep 1 s
    assert events_of(project) == file_upload(project, spans)


def test_wrong_token_and_oversize_body_are_refused_not_retried(receiver, project, settings):
    spans = openinference_spans(("Paris",))
    assert exporter(receiver, token="ta_wrong").export(spans) is SpanExportResult.FAILURE
    settings.TA_OTLP_MAX_BODY_BYTES = 200
    exp = exporter(receiver)
    assert exp.export(spans) is SpanExportResult.FAILURE
    assert len(encode_spans(spans).SerializeToString()) > 200
    assert OtlpSpan.objects.count() == 0


def test_openinference_instrumented_openai_client(worker, receiver, project):
    """An agent loop through the real `openai` client, instrumented by OpenInference, its
    spans batched by the SDK and exported to the receiver."""
    import openai
    from openinference.instrumentation.openai import OpenAIInstrumentor

    server = FakeOpenAI().start()
    server.queue(
        Reply.tool_calls([("get_weather", {"city": "Paris"})]),
        Reply.text("It is 18C and sunny in Paris."),
    )
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(BatchSpanProcessor(exporter(receiver, gzip=True)))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("weather-agent")
    try:
        client = openai.OpenAI(base_url=server.url, api_key="sk-test", max_retries=0)
        tools = [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            }
        ]
        messages: list = [
            {"role": "system", "content": "You are a travel assistant."},
            {"role": "user", "content": "What is the weather in Paris?"},
        ]
        with tracer.start_as_current_span("agent") as root:
            root.set_attribute("openinference.span.kind", "AGENT")
            first = client.chat.completions.create(
                model="fake-model", messages=messages, tools=tools
            )
            call = first.choices[0].message.tool_calls[0]
            with tracer.start_as_current_span("get_weather") as tool:
                tool.set_attribute("openinference.span.kind", "TOOL")
                tool.set_attribute("tool.name", "get_weather")
                tool.set_attribute("input.value", call.function.arguments)
                tool.set_attribute("output.value", "18C and sunny in Paris")
            messages += [
                first.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": "18C and sunny in Paris"},
            ]
            client.chat.completions.create(model="fake-model", messages=messages, tools=tools)
        provider.force_flush()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
        server.stop()
    spans = memory.get_finished_spans()
    assert len(spans) == 4
    wait_for(lambda: imported(project, 1), timeout=60)
    got = events_of(project)
    assert got == file_upload(project, spans)
    ((events),) = got.values()
    assert [(e["type"], e.get("role"), e.get("name")) for e in events] == [
        ("trace", None, None),
        ("message", "system", None),
        ("message", "user", None),
        ("tool_call", None, "get_weather"),
        ("tool_result", None, None),
        ("message", "assistant", None),
    ]
    assert json.loads(orjson.dumps(events[3]["arguments"])) == {"city": "Paris"}


def test_langfuse_sdk_exporting_to_the_receiver(worker, receiver, project):
    """The Langfuse SDK's own span processor, given the OTLP exporter (docs/otlp.md)."""
    spans = langfuse_spans(span_exporter=exporter(receiver))
    wait_for(lambda: imported(project, 1), timeout=60)
    got = events_of(project)
    assert got == file_upload(project, spans)
    ((events),) = got.values()
    assert [e["type"] for e in events] == [
        "trace",
        "message",
        "message",
        "tool_call",
        "tool_result",
        "message",
    ]
