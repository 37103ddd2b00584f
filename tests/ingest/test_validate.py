from __future__ import annotations

import pytest

from traces.validate import validate_event


def paths(ev):  # type: ignore[no-untyped-def]
    return [p for p, _ in validate_event(ev)]


def test_accepts_minimal_event_of_unknown_type():
    assert validate_event({"trace_id": "t", "type": "my_custom_thing", "anything": [1]}) == []


def test_rejects_line_that_is_not_an_object():
    [(path, msg)] = validate_event([1, 2])
    assert path == "$" and "found an array" in msg


def test_reports_missing_trace_id_and_type():
    assert paths({}) == ["$.trace_id", "$.type"]


def test_rejects_tool_call_with_string_arguments():
    [(path, msg)] = validate_event(
        {"trace_id": "t", "type": "tool_call", "name": "f", "arguments": '{"a": 1}'}
    )
    assert path == "$.arguments"
    assert "expected an object" in msg and 'found a string "{"a": 1}"' in msg


def test_seq_must_be_integer_not_boolean():
    [(path, msg)] = validate_event({"trace_id": "t", "type": "x", "seq": True})
    assert path == "$.seq" and "found a boolean" in msg


def test_negative_seq_rejected():
    assert paths({"trace_id": "t", "type": "x", "seq": -1}) == ["$.seq"]


@pytest.mark.parametrize("role", ["tool", "USER", ""])
def test_message_role_must_be_known(role):  # type: ignore[no-untyped-def]
    [(path, msg)] = validate_event({"trace_id": "t", "type": "message", "role": role})
    assert path == "$.role" and "one of system, user, assistant" in msg


def test_feedback_kind_and_targets_checked():
    ev = {
        "trace_id": "t",
        "type": "message",
        "role": "user",
        "feedback": {"kind": "rant", "targets": ["c1", 2]},
    }
    assert paths(ev) == ["$.feedback.kind", "$.feedback.targets[1]"]


def test_claim_confidence_out_of_range_has_nested_path():
    ev = {
        "trace_id": "t",
        "type": "claims",
        "claims": [{"id": "c1", "confidence": 0.5}, {"id": "c2", "confidence": 1.5}],
    }
    [(path, msg)] = validate_event(ev)
    assert path == "$.claims[1].confidence" and "between 0.0 and 1.0" in msg


@pytest.mark.parametrize("conf", [0.0, 0.5, 0.85, 0.9, 1.0])
def test_claim_confidence_edges_accepted(conf):  # type: ignore[no-untyped-def]
    assert (
        validate_event(
            {"trace_id": "t", "type": "claims", "claims": [{"id": "c", "confidence": conf}]}
        )
        == []
    )


def test_duplicate_claim_ids_rejected():
    ev = {"trace_id": "t", "type": "claims", "claims": [{"id": "c"}, {"id": "c"}]}
    assert paths(ev) == ["$.claims[1].id"]


def test_verification_accepts_cannot_exceed_votes():
    ev = {"trace_id": "t", "type": "verification", "candidate_id": "p", "accepts": 4, "votes": 3}
    [(path, msg)] = validate_event(ev)
    assert path == "$.accepts" and "cannot exceed" in msg


def test_verification_zero_votes_ok():
    assert (
        validate_event(
            {"trace_id": "t", "type": "verification", "candidate_id": "p", "accepts": 0, "votes": 0}
        )
        == []
    )


def test_timestamp_must_be_rfc3339():
    assert validate_event({"trace_id": "t", "type": "x", "ts": "2026-11-30T06:54:24.5+01:00"}) == []
    assert paths({"trace_id": "t", "type": "x", "ts": "yesterday"}) == ["$.ts"]


def test_header_tools_checked_per_item():
    ev = {
        "trace_id": "t",
        "type": "trace",
        "tools": [{"name": "ok"}, {"description": "no name"}, "x"],
    }
    assert paths(ev) == ["$.tools[1].name", "$.tools[2]"]


def test_header_outcome_types():
    ev = {"trace_id": "t", "type": "trace", "outcome": {"success": "yes", "reward": "1"}}
    assert paths(ev) == ["$.outcome.success", "$.outcome.reward"]


def test_long_trace_id_rejected_with_length():
    [(path, msg)] = validate_event({"trace_id": "x" * 300, "type": "x"})
    assert path == "$.trace_id" and "300" in msg


def test_found_value_is_truncated_in_message():
    [(_, msg)] = validate_event({"trace_id": "t", "type": "x", "seq": "y" * 1000})
    assert len(msg) < 120


# --- the fast path never accepts what the full validator rejects --------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.conftest import fuzz_examples  # noqa: E402
from traces.validate import validate_event_fully  # noqa: E402

_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=2**33),
    st.floats(),
    st.text(max_size=5),
    st.sampled_from(["", "user", "assistant", "ok", "error", "robot"]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
_keys = st.sampled_from(
    [
        "trace_id",
        "seq",
        "turn",
        "ts",
        "labels",
        "meta",
        "role",
        "content",
        "feedback",
        "call_id",
        "name",
        "arguments",
        "status",
        "candidate_id",
        "parent",
        "round",
        "answer",
        "passed",
        "source",
        "extra",
    ]
)


@settings(max_examples=fuzz_examples(2000), deadline=None)
@given(
    etype=st.sampled_from(
        ["message", "tool_call", "tool_result", "candidate", "check", "trace", "claims", "other"]
    ),
    fields=st.dictionaries(_keys, _values, max_size=7),
    tid=st.sampled_from(["t", "", 5]),
)
def test_fast_path_agrees_with_the_full_validator(etype, fields, tid):  # type: ignore[no-untyped-def]
    ev = {**fields, "type": etype, "trace_id": tid}
    assert (validate_event(ev) == []) == (validate_event_fully(ev) == [])
    if validate_event_fully(ev):
        assert validate_event(ev) == validate_event_fully(ev)  # same words for the user
