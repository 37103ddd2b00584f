from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_examples
from traces.importers import detect

from ._helpers import check_fuzzed, check_invariants, roundtrip, run, validate_all
from .fuzz import mutate

SAMPLE = {
    "id": "conv-1",
    "model": "gpt-4o",
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ],
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
        {"role": "tool", "tool_call_id": "c2", "content": "error: bad args"},
        {"role": "assistant", "content": "Paris is 18C."},
        {"role": "user", "content": "Thanks"},
    ],
}


def line(obj) -> bytes:
    return orjson.dumps(obj) + b"\n"


def test_maps_calls_results_and_turns():
    events, report = run("openai_chat", line(SAMPLE))
    evs = [se.event for se in events]
    assert [e["type"] for e in evs] == [
        "trace",
        "message",
        "message",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "message",
        "message",
    ]
    header = evs[0]
    assert header["trace_id"] == "openai_chat:conv-1"
    assert header["model"] == "gpt-4o"
    assert header["tools"][0]["name"] == "get_weather"
    assert evs[3]["arguments"] == {"city": "Paris"} and evs[3]["call_id"] == "c1"
    assert [e["call_id"] for e in evs[5:7]] == ["c1", "c2"]
    assert evs[-1]["turn"] == 1 and evs[2]["turn"] == 0
    assert report.errors == []
    check_invariants(events)
    roundtrip(events)
    validate_all(events)


def test_broken_arguments_are_kept_and_flagged():
    events, report = run("openai_chat", line(SAMPLE))
    call = events[4].event
    assert call["arguments"] == {}
    assert call["meta"]["raw_arguments"] == '{"city": "Rome"'
    assert call["meta"]["arguments_error"].startswith(
        "$.messages[2].tool_calls[1].function.arguments"
    )
    assert report.flags["arguments_not_json_object"] == 1


def test_unpaired_tool_result_is_reported():
    rec = {
        "messages": [
            {"role": "user", "content": "x"},
            {"role": "tool", "tool_call_id": "nope", "content": "r"},
        ]
    }
    events, report = run("openai_chat", line(rec))
    assert events[-1].event["meta"]["unpaired"] is True
    assert report.flags["tool_result_unpaired"] == 1
    assert report.unmapped["tool result without a matching call"] == 1


def test_reused_call_id_gets_unique_suffix():
    rec = {
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {
                "role": "assistant",
                "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "a", "content": "2"},
        ]
    }
    events, report = run("openai_chat", line(rec))
    ids = [(e.event["type"], e.event["call_id"]) for e in events if "call_id" in e.event]
    assert ids == [
        ("tool_call", "a"),
        ("tool_result", "a"),
        ("tool_call", "a#2"),
        ("tool_result", "a#2"),
    ]
    assert report.flags["call_id_reused"] == 1
    check_invariants(events)


def test_truncated_line_is_an_error_and_other_lines_import():
    data = (
        line(SAMPLE) + b'{"messages": [{"role": "user", "con\n' + line({**SAMPLE, "id": "conv-2"})
    )
    events, report = run("openai_chat", data)
    assert {e.event["trace_id"] for e in events} == {"openai_chat:conv-1", "openai_chat:conv-2"}
    [err] = report.errors
    assert err.line == 2 and err.path == "$" and "invalid JSON" in err.message


def test_wrong_types_are_errors_with_paths():
    bad = [
        ({"messages": "hello"}, "$.messages", "expected an array of messages, found string"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "$.messages[0].role", "found robot"),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "a", "function": {"arguments": "{}"}}],
                    }
                ]
            },
            "$.messages[0].tool_calls[0].function.name",
            "expected a function name string",
        ),
        (
            {
                "messages": [],
                "tools": [{"type": "function", "function": {"description": "no name"}}],
            },
            "$.tools[0].function.name",
            "expected a tool name string",
        ),
        ([1, 2], "$", "expected an object with messages, found array"),
    ]
    for i, (rec, path, msg) in enumerate(bad, 1):
        events, report = run("openai_chat", line(rec))
        assert events == []
        [err] = report.errors
        assert err.path == path and msg in err.message, (i, err)


def test_duplicate_ids_are_rejected():
    events, report = run("openai_chat", line(SAMPLE) + line(SAMPLE))
    assert len({e.event["trace_id"] for e in events}) == 1
    assert report.errors[0].line == 2 and "again" in report.errors[0].message


def test_detects_openai_chat_and_v1():
    assert detect(line(SAMPLE), "chat.jsonl") == "openai_chat"
    assert detect(b'{"trace_id": "t", "type": "trace"}\n', "x.jsonl") == "v1"


@settings(
    max_examples=fuzz_examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_fuzz_never_raises(data):
    blob = mutate(data, SAMPLE)
    events, report = run("openai_chat", blob)
    check_fuzzed(events, report)
