from __future__ import annotations

from policies.trace import (
    Candidate,
    Claims,
    GenericEvent,
    Judgment,
    Message,
    ToolCall,
    Trace,
    TraceHeader,
    Verification,
)


def test_empty_trace() -> None:
    t = Trace.from_events([])
    assert t.events == [] and t.trace_id == "" and t.actor_success() is None
    assert isinstance(t.header, TraceHeader) and t.header.tools == []


def test_builds_each_v1_type_and_keeps_raw_dicts() -> None:
    raw = [
        {
            "trace_id": "x",
            "type": "trace",
            "model": "m",
            "task": {"id": "1", "category": "c"},
            "tools": [
                {"name": "f", "parameters": {"type": "object"}, "read_only": True},
                {"bad": 1},
            ],
            "outcome": {"success": True, "reward": 1},
        },
        {
            "trace_id": "x",
            "type": "message",
            "role": "user",
            "content": "hi",
            "feedback": {"kind": "challenge", "targets": ["c1"]},
            "labels": {"valid": False},
        },
        {
            "trace_id": "x",
            "type": "tool_call",
            "call_id": "1",
            "name": "f",
            "arguments": '{"a": 1}',
        },
        {
            "trace_id": "x",
            "type": "claims",
            "claims": [
                {
                    "id": "c1",
                    "text": "t",
                    "confidence": 85,
                    "evidence": [{"kind": "test", "ref": "r", "passed": "true"}],
                },
                "junk",
            ],
        },
        {
            "trace_id": "x",
            "type": "candidate",
            "candidate_id": "k",
            "round": "2",
            "labels": {"correct": 1},
        },
        {"trace_id": "x", "type": "verification", "candidate_id": "k", "accepts": 9, "votes": 5},
        {
            "trace_id": "x",
            "type": "judgment",
            "pair": "p",
            "orientation": "BA",
            "scores": {"a": 1, "b": 3},
            "fatal": ["a"],
            "prefer": "b",
            "confidence": 0.9,
        },
        {"trace_id": "x", "type": "mystery", "whatever": [1, 2]},
    ]
    t = Trace.from_events(raw)
    h, msg, call, claims, cand, ver, judg, other = t.events
    assert isinstance(h, TraceHeader) and h.category == "c" and h.success is True
    assert [tool.name for tool in h.tools] == ["f"] and h.tools[0].read_only
    assert isinstance(msg, Message) and msg.feedback is not None
    assert msg.feedback.targets == ["c1"] and msg.labels == {"valid": False}
    assert isinstance(call, ToolCall) and call.arguments == {"a": 1}
    assert isinstance(claims, Claims) and len(claims.claims) == 1
    assert claims.claims[0].confidence == 0.85 and claims.claims[0].evidence[0].passed is True
    assert isinstance(cand, Candidate) and cand.round == 2
    assert isinstance(ver, Verification) and (ver.accepts, ver.votes) == (5, 5)
    assert isinstance(judg, Judgment) and judg.prefer == "B" and judg.fatal == {"A": True}
    assert isinstance(other, GenericEvent) and other.raw["whatever"] == [1, 2]
    assert t.raw_events() == raw and all(a is b for a, b in zip(t.raw_events(), raw, strict=True))


def test_orders_by_seq_only_when_every_event_has_one() -> None:
    a = {"trace_id": "x", "type": "message", "seq": 2, "content": "second"}
    b = {"trace_id": "x", "type": "message", "seq": 1, "content": "first"}
    assert [e.raw["content"] for e in Trace.from_events([a, b]).events] == ["first", "second"]
    c = {"trace_id": "x", "type": "message", "content": "no seq"}
    assert [e.raw["content"] for e in Trace.from_events([a, b, c]).events] == [
        "second",
        "first",
        "no seq",
    ]
    assert [e.index for e in Trace.from_events([a, b]).events] == [0, 1]


def test_missing_fields_default_sensibly() -> None:
    t = Trace.from_events(
        [
            {"type": "verification"},
            {"type": "tool_result"},
            {"type": "candidate"},
            {"type": "claims"},
        ]
    )
    ver = t.events[0]
    assert isinstance(ver, Verification) and (ver.accepts, ver.votes) == (0, 0)
    assert t.events[1].raw == {"type": "tool_result"}
    assert t.header.trace_id == "" and t.actor_success() is None


def test_actor_success_falls_back_to_labels() -> None:
    t = Trace.from_events(
        [
            {"trace_id": "x", "type": "candidate", "labels": {"valid": True}},
            {"trace_id": "x", "type": "candidate", "labels": {"valid": False}},
        ]
    )
    assert t.actor_success() is False
    t = Trace.from_events(
        [
            {"trace_id": "x", "type": "check", "passed": True},
            {"trace_id": "x", "type": "check", "passed": False},
        ]
    )
    assert t.actor_success() is False
