"""OTel GenAI spans written by the real libraries: OpenLLMetry's OpenAI instrumentation
(`opentelemetry-instrumentation-openai`, the OTel GenAI conventions' `gen_ai.input.messages` /
`gen_ai.output.messages`) around the real `openai` client talking to the scripted
OpenAI-compatible server of tests/fakes; and spans with the flat attributes earlier OpenLLMetry
releases write, named by its own constants (`opentelemetry-semantic-conventions-ai`)."""

from __future__ import annotations

import json

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv_ai import SpanAttributes as S
from opentelemetry.semconv_ai import TraceloopSpanKindValues as Kind

from tests.fakes.openai_server import FakeOpenAI, Reply

SYSTEM = "You are a travel assistant."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def openllmetry_spans() -> list:
    """An agent loop (tool call, then the answer) through the instrumented `openai` client."""
    import openai
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    server = FakeOpenAI().start()
    server.queue(
        Reply.tool_calls([("get_weather", {"city": "Paris"})]),
        Reply.text("It is 18C and sunny in Paris."),
    )
    provider, memory = _provider()
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(base_url=server.url, api_key="sk-test", max_retries=0)
        messages: list = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "What is the weather in Paris?"},
        ]
        with provider.get_tracer("weather-agent").start_as_current_span("agent"):
            first = client.chat.completions.create(
                model="fake-model", messages=messages, tools=TOOLS
            )
            call = first.choices[0].message.tool_calls[0]
            messages += [
                first.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": "18C and sunny in Paris"},
            ]
            client.chat.completions.create(model="fake-model", messages=messages, tools=TOOLS)
    finally:
        instrumentor.uninstrument()
        server.stop()
    provider.shutdown()
    return list(memory.get_finished_spans())


def traceloop_flat_spans() -> list:
    """The same loop as earlier OpenLLMetry releases record it: flat `gen_ai.prompt.N.*` and
    `gen_ai.completion.N.*` attributes on `llm.request.type = chat` spans, and the tool as a
    `traceloop.span.kind = tool` span with its entity's input and output."""
    provider, memory = _provider()
    tracer = provider.get_tracer("traceloop")
    with tracer.start_as_current_span("weather.workflow") as root:
        root.set_attribute(S.TRACELOOP_SPAN_KIND, Kind.WORKFLOW.value)
        with tracer.start_as_current_span("openai.chat") as llm:
            llm.set_attributes(
                {
                    S.LLM_REQUEST_TYPE: "chat",
                    S.LLM_REQUEST_MODEL: "gpt-4o-mini",
                    f"{S.LLM_PROMPTS}.0.role": "system",
                    f"{S.LLM_PROMPTS}.0.content": SYSTEM,
                    f"{S.LLM_PROMPTS}.1.role": "user",
                    f"{S.LLM_PROMPTS}.1.content": "What is the weather in Paris?",
                    f"{S.LLM_COMPLETIONS}.0.role": "assistant",
                    f"{S.LLM_COMPLETIONS}.0.tool_calls.0.id": "call_1",
                    f"{S.LLM_COMPLETIONS}.0.tool_calls.0.name": "get_weather",
                    f"{S.LLM_COMPLETIONS}.0.tool_calls.0.arguments": json.dumps({"city": "Paris"}),
                    S.LLM_USAGE_PROMPT_TOKENS: 20,
                    S.LLM_USAGE_COMPLETION_TOKENS: 7,
                }
            )
        with tracer.start_as_current_span("get_weather.tool") as tool:
            tool.set_attributes(
                {
                    S.TRACELOOP_SPAN_KIND: Kind.TOOL.value,
                    S.TRACELOOP_ENTITY_NAME: "get_weather",
                    S.TRACELOOP_ENTITY_INPUT: json.dumps({"args": [], "kwargs": {"city": "Paris"}}),
                    S.TRACELOOP_ENTITY_OUTPUT: json.dumps("18C and sunny in Paris"),
                }
            )
        with tracer.start_as_current_span("openai.chat") as llm:
            llm.set_attributes(
                {
                    S.LLM_REQUEST_TYPE: "chat",
                    S.LLM_REQUEST_MODEL: "gpt-4o-mini",
                    f"{S.LLM_PROMPTS}.0.role": "system",
                    f"{S.LLM_PROMPTS}.0.content": SYSTEM,
                    f"{S.LLM_PROMPTS}.1.role": "user",
                    f"{S.LLM_PROMPTS}.1.content": "What is the weather in Paris?",
                    f"{S.LLM_PROMPTS}.2.role": "assistant",
                    f"{S.LLM_PROMPTS}.2.tool_calls.0.id": "call_1",
                    f"{S.LLM_PROMPTS}.2.tool_calls.0.name": "get_weather",
                    f"{S.LLM_PROMPTS}.2.tool_calls.0.arguments": json.dumps({"city": "Paris"}),
                    f"{S.LLM_PROMPTS}.3.role": "tool",
                    f"{S.LLM_PROMPTS}.3.tool_call_id": "call_1",
                    f"{S.LLM_PROMPTS}.3.content": "18C and sunny in Paris",
                    f"{S.LLM_COMPLETIONS}.0.role": "assistant",
                    f"{S.LLM_COMPLETIONS}.0.content": "It is 18C and sunny in Paris.",
                    S.LLM_USAGE_PROMPT_TOKENS: 41,
                    S.LLM_USAGE_COMPLETION_TOKENS: 9,
                }
            )
    provider.shutdown()
    return list(memory.get_finished_spans())
