"""OTLP JSON written by the real libraries: spans made with `opentelemetry-sdk`, their
attributes named by `openinference-semantic-conventions` (what Arize Phoenix and OpenInference
instrumentations record) or set by the Langfuse Python SDK, encoded by the OpenTelemetry OTLP
exporter's own encoder (`encode_spans`) and written as OTLP/JSON (protobuf JSON mapping with hex
trace and span ids, as the OTLP specification requires and collectors' file exporters write).

No hand-typed sample: `python -m tests.importers.otlp_samples OUT.json [langfuse]` writes one.
"""

from __future__ import annotations

import base64
import itertools
import json
import sys
from typing import Any

import orjson
from google.protobuf.json_format import MessageToDict
from openinference.semconv.trace import MessageAttributes as M
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
from openinference.semconv.trace import SpanAttributes as S
from openinference.semconv.trace import ToolAttributes
from openinference.semconv.trace import ToolCallAttributes as T
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

SYSTEM = "You are a travel assistant. Use the tools."
WEATHER_SCHEMA = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def _messages(prefix: str, messages: list[dict]) -> dict[str, Any]:
    """OpenInference's flattened message attributes: `<prefix>.<i>.message.role`, …"""
    out: dict[str, Any] = {}
    for i, msg in enumerate(messages):
        base = f"{prefix}.{i}."
        out[base + M.MESSAGE_ROLE] = msg["role"]
        if msg.get("content") is not None:
            out[base + M.MESSAGE_CONTENT] = msg["content"]
        if msg.get("tool_call_id"):
            out[base + M.MESSAGE_TOOL_CALL_ID] = msg["tool_call_id"]
        for j, call in enumerate(msg.get("tool_calls", ())):
            cbase = f"{base}{M.MESSAGE_TOOL_CALLS}.{j}."
            out[cbase + T.TOOL_CALL_ID] = call["id"]
            out[cbase + T.TOOL_CALL_FUNCTION_NAME] = call["name"]
            out[cbase + T.TOOL_CALL_FUNCTION_ARGUMENTS_JSON] = json.dumps(call["arguments"])
    return out


def _provider(service: str) -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def openinference_spans(cities: tuple[str, ...] = ("Paris", "Atlantis")) -> list:
    """One agent run per city: LLM → tool call → TOOL span → LLM answer. A city the tool does not
    know makes the TOOL span end in error (status ERROR), as instrumentations record it."""
    provider, exporter = _provider("travel-agent")
    tracer = provider.get_tracer("openinference.instrumentation.example")
    for n, city in enumerate(cities):
        question = f"What is the weather in {city}?"
        call = {"id": f"call_{n}", "name": "get_weather", "arguments": {"city": city}}
        with tracer.start_as_current_span("agent") as root:
            root.set_attribute(S.OPENINFERENCE_SPAN_KIND, Kind.AGENT.value)
            root.set_attribute(S.INPUT_VALUE, question)
            first = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
            with tracer.start_as_current_span("ChatCompletion") as llm:
                llm.set_attribute(S.OPENINFERENCE_SPAN_KIND, Kind.LLM.value)
                llm.set_attribute(S.LLM_MODEL_NAME, "gpt-4o-2024-08-06")
                llm.set_attribute(
                    f"{S.LLM_TOOLS}.0.{ToolAttributes.TOOL_JSON_SCHEMA}", json.dumps(WEATHER_SCHEMA)
                )
                llm.set_attributes(_messages(S.LLM_INPUT_MESSAGES, first))
                answer = {"role": "assistant", "tool_calls": [call]}
                llm.set_attributes(_messages(S.LLM_OUTPUT_MESSAGES, [answer]))
                llm.set_attributes(
                    {
                        S.LLM_TOKEN_COUNT_PROMPT: 112,
                        S.LLM_TOKEN_COUNT_COMPLETION: 18,
                        S.LLM_TOKEN_COUNT_TOTAL: 130,
                        S.LLM_COST_TOTAL: 0.00046,
                    }
                )
            with tracer.start_as_current_span("get_weather") as tool:
                tool.set_attribute(S.OPENINFERENCE_SPAN_KIND, Kind.TOOL.value)
                tool.set_attribute(S.TOOL_NAME, "get_weather")
                tool.set_attribute(S.INPUT_VALUE, json.dumps(call["arguments"]))
                if city == "Atlantis":
                    result = "Error: unknown city Atlantis"
                    tool.set_status(Status(StatusCode.ERROR, "unknown city"))
                else:
                    result = f"18C and sunny in {city}"
                tool.set_attribute(S.OUTPUT_VALUE, result)
            second = [
                *first,
                answer,
                {"role": "tool", "tool_call_id": call["id"], "content": result},
            ]
            with tracer.start_as_current_span("ChatCompletion") as llm:
                llm.set_attribute(S.OPENINFERENCE_SPAN_KIND, Kind.LLM.value)
                llm.set_attribute(S.LLM_MODEL_NAME, "gpt-4o-2024-08-06")
                llm.set_attributes(_messages(S.LLM_INPUT_MESSAGES, second))
                final = {"role": "assistant", "content": f"Here is the weather: {result}"}
                llm.set_attributes(_messages(S.LLM_OUTPUT_MESSAGES, [final]))
                # No cost on this call: the trace's cost is the first call's alone.
                llm.set_attributes({S.LLM_TOKEN_COUNT_PROMPT: 160, S.LLM_TOKEN_COUNT_COMPLETION: 9})
            root.set_attribute(S.OUTPUT_VALUE, final["content"])
    provider.shutdown()
    return list(exporter.get_finished_spans())


_LANGFUSE_KEYS = itertools.count()


def langfuse_spans(span_exporter: Any = None) -> list:
    """The same kind of run through the Langfuse Python SDK (no server: its spans go to our
    in-memory exporter; its own exporter points at a closed loopback port and is shut down, or
    is `span_exporter` when given)."""
    from langfuse import Langfuse

    provider, exporter = _provider("langfuse-agent")
    # A public key of its own per call: the SDK keeps one client per key for the process, and a
    # client made earlier (another test's, with its provider shut down) would take these spans.
    client = Langfuse(
        public_key=f"pk-lf-test-{next(_LANGFUSE_KEYS)}",
        secret_key="sk-lf-test",
        host="http://127.0.0.1:9",
        tracer_provider=provider,
        flush_at=1000,
        flush_interval=3600,
        span_exporter=span_exporter,
    )
    question = "What is the weather in Paris?"
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    with client.start_as_current_observation(as_type="agent", name="agent", input=question) as root:
        with client.start_as_current_observation(
            as_type="generation", name="llm", model="claude-sonnet-4", input=messages
        ) as gen:
            gen.update(
                output={
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "toolu_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                        }
                    ],
                }
            )
        with client.start_as_current_observation(
            as_type="tool", name="get_weather", input={"city": "Paris"}
        ) as tool:
            tool.update(output="18C and sunny in Paris")
        with client.start_as_current_observation(
            as_type="generation", name="llm", model="claude-sonnet-4", input=messages
        ) as gen:
            gen.update(
                output="It is 18C and sunny in Paris.",
                usage_details={"input": 210, "output": 11},
                cost_details={"input": 0.00063, "output": 0.000165},
            )
        root.update(output="It is 18C and sunny in Paris.")
    client.shutdown()
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _hex_ids(node: Any) -> Any:
    """OTLP/JSON: trace and span ids are hex strings, not the protobuf mapping's base64."""
    if isinstance(node, dict):
        return {
            k: (
                base64.b64decode(v).hex()
                if k in ("traceId", "spanId", "parentSpanId")
                else _hex_ids(v)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def otlp_json(spans: list, *, hex_ids: bool = True) -> bytes:
    """One ExportTraceServiceRequest as OTLP/JSON (hex ids unless asked for the base64 that a
    plain protobuf JSON dump gives)."""
    doc = MessageToDict(encode_spans(spans))
    return orjson.dumps(_hex_ids(doc) if hex_ids else doc)


if __name__ == "__main__":
    spans = langfuse_spans() if sys.argv[2:] == ["langfuse"] else openinference_spans()
    with open(sys.argv[1], "wb") as out:
        out.write(otlp_json(spans))
