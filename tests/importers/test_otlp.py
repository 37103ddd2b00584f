"""OTLP/JSON importer on spans written by the real libraries (tests/importers/otlp_samples.py):
opentelemetry-sdk spans with OpenInference attributes, and the Langfuse Python SDK's spans."""

from __future__ import annotations

import functools

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_examples
from traces.importers import detect

from ._helpers import check_fuzzed, check_invariants, roundtrip, run, validate_all
from .fuzz import mutate
from .otlp_samples import langfuse_spans, openinference_spans, otlp_json


@functools.cache
def oi_spans() -> tuple:
    return tuple(openinference_spans())


@functools.cache
def lf_spans() -> tuple:
    return tuple(langfuse_spans())


@pytest.mark.parametrize("hex_ids", [True, False], ids=["hex-ids", "base64-ids"])
def test_openinference_spans_become_messages_calls_and_results(hex_ids):
    spans = list(oi_spans())
    data = otlp_json(spans, hex_ids=hex_ids)
    assert detect(data[:65536], "traces.json") == "otlp"
    events, report = run("otlp", data)
    assert report.errors == [] and report.flags == {}
    traces = check_invariants(events)
    assert set(traces) == {f"otel:{s.context.trace_id:032x}" for s in spans}
    by_city = {evs[0]["task"]["input"].rsplit(" ", 1)[1]: evs for evs in traces.values()}
    paris = by_city["Paris?"]
    assert [(e["type"], e.get("role")) for e in paris] == [
        ("trace", None),
        ("message", "system"),
        ("message", "user"),
        ("tool_call", None),
        ("tool_result", None),
        ("message", "assistant"),
    ]
    head, call, result = paris[0], paris[3], paris[4]
    assert (head["agent"], head["model"]) == ("travel-agent", "gpt-4o-2024-08-06")
    assert [t["name"] for t in head["tools"]] == ["get_weather"]
    assert (call["name"], call["arguments"], call["call_id"]) == (
        "get_weather",
        {"city": "Paris"},
        "call_0",
    )
    assert (result["call_id"], result["status"]) == ("call_0", "ok")
    # The Atlantis tool span ended with status ERROR.
    assert by_city["Atlantis?"][4]["status"] == "error"
    # The trace tree: every span with its parent, and the events each span produced.
    tree = head["meta"]["otel"]["spans"]
    assert [n["kind"] for n in tree] == ["AGENT", "LLM", "TOOL", "LLM"]
    root = tree[0]
    assert root["parent_span_id"] is None
    assert all(n["parent_span_id"] == root["span_id"] for n in tree[1:])
    assert [n["events"] for n in tree] == [[], [1, 2, 3], [4], [5]]
    span_of = {seq: n["span_id"] for n in tree for seq in n["events"]}
    assert all(e["meta"]["span_id"] == span_of[e["seq"]] for e in paris[1:])
    roundtrip(events)
    validate_all(events)


def test_langfuse_sdk_spans_come_in_through_the_otlp_importer():
    data = otlp_json(list(lf_spans()))
    assert detect(data[:65536], "") == "otlp"
    events, report = run("otlp", data)
    assert report.errors == []
    [evs] = check_invariants(events).values()
    assert [(e["type"], e.get("role")) for e in evs] == [
        ("trace", None),
        ("message", "system"),
        ("message", "user"),
        ("tool_call", None),
        ("tool_result", None),
        ("message", "assistant"),
    ]
    head = evs[0]
    assert (head["agent"], head["model"]) == ("langfuse-agent", "claude-sonnet-4")
    assert (evs[3]["call_id"], evs[3]["arguments"]) == ("toolu_1", {"city": "Paris"})
    assert evs[4]["content"] == "18C and sunny in Paris"
    assert evs[5]["content"] == "It is 18C and sunny in Paris."
    assert [n["kind"] for n in head["meta"]["otel"]["spans"]] == ["AGENT", "LLM", "TOOL", "LLM"]
    validate_all(events)


def test_one_request_per_line_and_bad_spans_name_line_and_path():
    spans = list(oi_spans())
    by_trace: dict[int, list] = {}
    for s in spans:
        by_trace.setdefault(s.context.trace_id, []).append(s)
    first, second = (orjson.loads(otlp_json(v)) for v in by_trace.values())
    second["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["spanId"] = "xyz"
    bad_trace = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 7, "spanId": "00"}]}]}]}
    data = b"\n".join(orjson.dumps(x) for x in (first, second, bad_trace)) + b"\nnot json\n"
    events, report = run("otlp", data)
    got = [(e.line, e.path) for e in report.errors]
    assert sorted(got) == [
        (2, "$.resourceSpans[0].scopeSpans[0].spans[1].spanId"),
        (3, "$.resourceSpans[0].scopeSpans[0].spans[0].traceId"),
        (4, "$"),
    ]
    # The trace with a broken span is rejected whole; the other one is imported.
    assert len(check_invariants(events)) == 1


@settings(
    max_examples=fuzz_examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_fuzz_never_raises_and_errors_name_line_and_path(data):
    doc = orjson.loads(otlp_json(list(oi_spans())[:4]))
    events, report = run("otlp", mutate(data, doc))
    check_fuzzed(events, report)
    for err in report.errors:
        assert err.line >= 0 and err.path.startswith("$")
