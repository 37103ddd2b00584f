"""OTel GenAI message attributes (`traces.importers._otlp_genai`): OpenLLMetry's real OpenAI
instrumentation around the real `openai` client, and the flat attributes of earlier OpenLLMetry
releases, become the same agent loop a user reads and the policies audit — system prompt, user
turn, the model's tool call, its result, the answer — with tokens and the tools offered."""

from __future__ import annotations

import functools

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_examples
from tests.importers.fuzz import mutate
from tests.importers.genai_samples import SYSTEM, openllmetry_spans, traceloop_flat_spans
from tests.importers.otlp_samples import otlp_json

from ._helpers import check_fuzzed, check_invariants, run, traces_of, validate_all


@functools.cache
def _spans(kind: str) -> tuple:
    return tuple(openllmetry_spans() if kind == "openllmetry" else traceloop_flat_spans())


def loop(kind: str) -> tuple[list[dict], object]:
    events, report = run("otlp", otlp_json(list(_spans(kind))))
    assert report.errors == []
    validate_all(events)
    check_invariants(events)
    [evs] = traces_of(events).values()
    return evs, report


def shape(evs: list[dict]) -> list[tuple]:
    out = []
    for e in evs[1:]:
        if e["type"] == "message":
            out.append(("message", e["role"], e["content"]))
        elif e["type"] == "tool_call":
            out.append(("tool_call", e["name"], e["arguments"]))
        elif e["type"] == "tool_result":
            out.append(("tool_result", e["status"], e["content"]))
    return out


@pytest.mark.parametrize("kind", ["openllmetry", "traceloop-flat"])
def test_genai_messages_become_the_agent_loop(kind):
    evs, _report = loop(kind)
    assert shape(evs) == [
        ("message", "system", SYSTEM),
        ("message", "user", "What is the weather in Paris?"),
        ("tool_call", "get_weather", {"city": "Paris"}),
        ("tool_result", "ok", "18C and sunny in Paris"),
        ("message", "assistant", "It is 18C and sunny in Paris."),
    ]
    call = next(e for e in evs if e["type"] == "tool_call")
    result = next(e for e in evs if e["type"] == "tool_result")
    assert result["call_id"] == call["call_id"]


def test_openllmetry_spans_carry_model_tokens_and_the_tools_offered():
    evs, report = loop("openllmetry")
    head = evs[0]
    assert head["model"] == "fake-model"
    assert [t["name"] for t in head["tools"]] == ["get_weather"]
    assert head["tools"][0]["parameters"]["properties"] == {"city": {"type": "string"}}
    usages = [e["usage"] for e in evs if "usage" in e]
    assert usages == [{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}] * 2
    # the message attributes are mapped, not reported as left over
    assert not [k for k in report.unmapped if "gen_ai.input" in k or "gen_ai.output" in k]


def test_flat_traceloop_spans_carry_tokens_and_the_tool_span_s_times():
    evs, _report = loop("traceloop-flat")
    assert evs[0]["model"] == "gpt-4o-mini"
    usages = [e["usage"] for e in evs if "usage" in e]
    assert usages == [
        {"input_tokens": 20, "output_tokens": 7},
        {"input_tokens": 41, "output_tokens": 9},
    ]
    result = next(e for e in evs if e["type"] == "tool_result")
    assert "ts" in result and "duration_ms" in result


@settings(
    max_examples=fuzz_examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data(), st.sampled_from(["openllmetry", "traceloop-flat"]))
def test_fuzz_genai_spans_never_raise(data, kind):
    doc = orjson.loads(otlp_json(list(_spans(kind))))
    events, report = run("otlp", mutate(data, doc))
    check_fuzzed(events, report)


def test_odd_genai_messages_are_read_as_far_as_they_go():
    """Messages of other shapes than the conventions': what can be read is, nothing raises."""
    from traces.importers._otlp_genai import genai_messages

    odd = orjson.dumps(
        [
            "just text",
            {"role": "user", "parts": "not a list"},
            {"parts": [{"type": "text", "content": 7}, "plain", {"type": "image"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "name": "f", "arguments": "x"}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "response": {"a": 1}}]},
        ]
    ).decode()
    got = genai_messages({"gen_ai.input.messages": odd}, "input", "user")
    assert got == [
        {"role": "user", "content": "just text", "tool_calls": []},
        {"role": "user", "content": "", "tool_calls": []},
        {"role": "user", "content": "plain", "tool_calls": []},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": None, "name": "f", "arguments": "x"}],
        },
        {"role": "tool", "content": {"a": 1}, "tool_calls": [], "tool_call_id": None},
    ]
    assert genai_messages({"gen_ai.input.messages": "not json"}, "input", "user") is None
    content = orjson.dumps([{"role": "assistant", "content": "an OpenAI-style message"}])
    assert genai_messages({"gen_ai.output.messages": content.decode()}, "output", "assistant") == [
        {"role": "assistant", "content": "an OpenAI-style message", "tool_calls": []}
    ]
