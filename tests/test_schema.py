"""The published JSON Schema of trace format v1 agrees with the app's fast validator.

`traces/schema/trace-v1.schema.json` is the contract we publish; `traces.validate.validate_event`
is what ingest runs. These tests keep the two in step: on the bundled examples, on events that
hypothesis builds per type and then breaks, and on named rejections.

Three rules of `validate_event` cannot be written in JSON Schema, so the agreement check leaves
them out (each has a named test below that pins the difference down):
  * verification: `accepts` must not exceed `votes` (a schema cannot compare two values);
  * claims: claim ids are unique within one record (`uniqueItems` compares whole items);
  * integer fields: JSON Schema counts 1.0 as an integer, validate_event does not. The generators
    therefore never put an integral float where an integer is expected.

No database: everything here is pure Python.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, ValidationError

from traces import validate
from traces.collect import Collector
from traces.reader import parse_line
from traces.validate import validate_event

SCHEMA_DIR = Path(validate.__file__).resolve().parent / "schema"
SCHEMA = json.loads((SCHEMA_DIR / "trace-v1.schema.json").read_text())
EXAMPLES = sorted((SCHEMA_DIR / "examples").glob("*.jsonl"))
VALIDATOR = Draft202012Validator(SCHEMA)

# Messages of the rules JSON Schema cannot express (see the module docstring).
INEXPRESSIBLE = ("cannot exceed votes", "appears twice in one record")


# -- helpers -------------------------------------------------------------------------------


def _schema_path(error: ValidationError) -> str:
    """The error's JSON path in validate_event's terms: a missing required field is reported at
    the field itself, not at the object that lacks it."""
    if error.validator == "required":
        missing = str(error.message).split("'")[1]
        return f"{error.json_path}.{missing}"
    return error.json_path


def schema_paths(event: Any) -> set[str]:
    return {_schema_path(e) for e in VALIDATOR.iter_errors(event)}


def validator_paths(event: Any) -> set[str]:
    """Paths of validate_event's errors, leaving out the rules a schema cannot express."""
    return {
        path
        for path, message in validate_event(event)
        if not any(marker in message for marker in INEXPRESSIBLE)
    }


def example_lines() -> list[tuple[str, int, bytes]]:
    out = []
    for path in EXAMPLES:
        for lineno, line in enumerate(path.read_bytes().splitlines(), 1):
            if line.strip():
                out.append((path.name, lineno, line))
    return out


# -- (a) the schema itself -------------------------------------------------------------------


def test_schema_is_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["additionalProperties"] is True


def test_every_schema_field_has_a_description() -> None:
    missing = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, sub in node.get("properties", {}).items():
                if "description" not in sub:
                    missing.append(f"{where}.{key}")
            for key, sub in node.items():
                if key != "if":  # the per-type conditions declare no fields
                    walk(sub, f"{where}/{key}")
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                walk(sub, f"{where}/{i}")

    walk(SCHEMA, "#")
    assert missing == []


def test_schema_constants_match_the_validator() -> None:
    """Enums, the ts regex and the id length are copied from validate.py; catch drift."""
    props = SCHEMA["properties"]
    defs = SCHEMA["$defs"]
    assert props["ts"]["pattern"] == validate._RFC3339.pattern
    assert props["end_ts"]["pattern"] == validate._RFC3339.pattern
    assert tuple(props["usage"]["properties"]) == validate.USAGE_KEYS
    assert props["trace_id"]["maxLength"] == validate.MAX_ID_LENGTH
    assert tuple(defs["message"]["properties"]["role"]["enum"]) == validate.ROLES
    feedback = defs["message"]["properties"]["feedback"]["properties"]
    assert tuple(feedback["kind"]["enum"]) == validate.FEEDBACK_KINDS
    evidence = defs["claims"]["properties"]["claims"]["items"]["properties"]["evidence"]
    assert tuple(evidence["items"]["properties"]["kind"]["enum"]) == validate.EVIDENCE_KINDS
    assert tuple(defs["tool_result"]["properties"]["status"]["enum"]) == validate.RESULT_STATUSES
    typed = tuple(rule["if"]["properties"]["type"]["const"] for rule in SCHEMA["allOf"])
    assert typed == validate.EVENT_TYPES
    assert all(rule["if"]["required"] == ["type"] for rule in SCHEMA["allOf"])


# -- (b) the bundled examples ------------------------------------------------------------------


def test_there_are_four_to_six_examples() -> None:
    assert 4 <= len(EXAMPLES) <= 6


@pytest.mark.parametrize(
    ("name", "lineno", "line"), example_lines(), ids=lambda v: v if isinstance(v, str) else None
)
def test_example_line_is_valid_under_both(name: str, lineno: int, line: bytes) -> None:
    event, warning, _ = parse_line(line, max_depth=64)
    assert warning is None
    assert validate_event(event) == []
    assert list(VALIDATOR.iter_errors(event)) == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_file_passes_the_trace_level_rules(path: Path) -> None:
    """Beyond one line: header first, seq on all events or none — what ingest checks next."""
    collector = Collector(max_events_per_trace=1000, max_reported_errors=100)
    for lineno, line in enumerate(path.read_bytes().splitlines(), 1):
        event, _, payload = parse_line(line, max_depth=64)
        collector.add(lineno, event, payload)  # type: ignore[arg-type]
    accepted, rejected = collector.finish()
    assert collector.errors == []
    assert rejected == []
    assert accepted


# -- (c) generated events: the two agree -------------------------------------------------------

text = st.text(max_size=12)
name = st.text(min_size=1, max_size=12)
opt_text = st.none() | text
count = st.integers(min_value=0, max_value=2**31 - 1)
prob = st.none() | st.floats(min_value=0.0, max_value=1.0)
number = st.none() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
opt_bool = st.none() | st.booleans()
scalar = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_value = st.recursive(
    scalar,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
json_object = st.dictionaries(st.text(max_size=6), json_value, max_size=3)
ts = st.one_of(
    st.datetimes().map(lambda d: d.isoformat() + "Z"),
    st.sampled_from(
        [
            "2026-01-31T12:00:00Z",
            "2026-01-31t12:00:00z",
            "2026-01-31 12:00:00.123456+05:30",
            "1999-12-31T23:59:59-08:00",
        ]
    ),
)


def _obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> st.SearchStrategy:
    return st.fixed_dictionaries(required, optional=optional or {})


evidence = _obj(
    {"kind": st.sampled_from(validate.EVIDENCE_KINDS)}, {"ref": opt_text, "passed": opt_bool}
)
claim = _obj(
    {"id": name},
    {
        "text": opt_text,
        "confidence": prob,
        "subject": opt_text,
        "evidence": st.lists(evidence, max_size=3),
    },
)
tool = _obj(
    {"name": name}, {"description": opt_text, "parameters": json_object, "read_only": opt_bool}
)
accepts_of_votes = count.flatmap(
    lambda votes: st.tuples(st.integers(min_value=0, max_value=votes), st.just(votes))
)

# Per type: (required fields, optional fields) of a valid event.
TYPE_FIELDS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "trace": (
        {},
        {
            "agent": opt_text,
            "model": opt_text,
            "task": _obj(
                {}, {"id": text | st.integers(), "benchmark": opt_text, "category": opt_text}
            ),
            "env": _obj({}, {"name": opt_text, "config": json_object}),
            "tools": st.lists(tool, max_size=3),
            "outcome": _obj({}, {"success": opt_bool, "reward": number}),
        },
    ),
    "message": (
        {"role": st.sampled_from(validate.ROLES)},
        {
            "content": opt_text,
            "feedback": _obj(
                {"kind": st.sampled_from(validate.FEEDBACK_KINDS)},
                {"targets": st.lists(text, max_size=3)},
            ),
        },
    ),
    "tool_call": ({"name": name, "arguments": json_object}, {"call_id": opt_text}),
    "tool_result": (
        {},
        {
            "call_id": opt_text,
            "status": st.sampled_from(validate.RESULT_STATUSES),
            "content": json_value,
        },
    ),
    "claims": ({"claims": st.lists(claim, max_size=4, unique_by=lambda c: c["id"])}, {}),
    "candidate": (
        {"candidate_id": name},
        {"parent": opt_text, "round": count, "answer": opt_text, "content": json_value},
    ),
    "verification": ({"candidate_id": name}, {"round": count, "verifier": opt_text}),
    "check": ({"name": name, "passed": st.booleans()}, {"source": opt_text}),
    "judgment": (
        {"pair": name, "orientation": st.sampled_from(("AB", "BA"))},
        {
            "scores": json_object,
            "fatal": json_object,
            "prefer": st.sampled_from(("A", "B", "tie", None)),
            "confidence": prob,
            "judge": opt_text,
        },
    ),
}
non_negative = st.integers(min_value=0) | st.floats(min_value=0, allow_infinity=False)
usage = _obj(
    {},
    {"input_tokens": count, "output_tokens": count, "total_tokens": count, "cached": json_value},
)
COMMON_OPTIONAL = {
    "seq": count,
    "ts": ts,
    "end_ts": ts,
    "duration_ms": non_negative,
    "cost_usd": non_negative,
    "usage": usage,
    "turn": count,
    "labels": json_object,
    "meta": json_object,
    "x_extra": json_value,
}
unknown_type = name.filter(lambda t: t not in validate.EVENT_TYPES)


@st.composite
def valid_events(draw: st.DrawFn) -> dict[str, Any]:
    etype = draw(st.sampled_from((*validate.EVENT_TYPES, "unknown")))
    required, optional = TYPE_FIELDS.get(etype, ({}, {"payload": json_value}))
    event = draw(
        _obj(
            {"trace_id": st.text(min_size=1, max_size=255), **required},
            {**COMMON_OPTIONAL, **optional},
        )
    )
    event["type"] = draw(unknown_type) if etype == "unknown" else etype
    if etype == "verification":
        event["accepts"], event["votes"] = draw(accepts_of_votes)
    return event


# Values that break fields: wrong JSON types, boundaries, near-miss enums and timestamps, other
# event types. No integral floats (1.0 is an integer to JSON Schema, not to validate_event).
non_integral_float = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda f: not f.is_integer()
)
bad_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.just(2**63),
    non_integral_float,
    st.sampled_from([-0.5, 0.5, 1.000001, -1e-9]),
    st.sampled_from(
        [
            "",
            "x",
            "A",
            "B",
            "tie",
            "ab",
            "AB",
            "BA",
            "ok",
            "OK",
            "error",
            "user",
            "robot",
            "challenge",
            "complaint",
            "test",
            "tool",
            "2026-01-31T12:00:00Z",
            "2026-01-31",
            "2026-1-31T12:00:00Z",
            "2026-01-31T12:00:00",
            "2026-01-31T12:00:00+0100",
            "x" * 255,
            "x" * 256,
            *validate.EVENT_TYPES,
        ]
    ),
    st.text(max_size=4),
    st.lists(st.sampled_from(["c1", "", 0, None, {}]), max_size=2),
    st.dictionaries(
        st.sampled_from(["id", "name", "kind", "x"]),
        st.sampled_from(["c1", "", 0, None, True]),
        max_size=2,
    ),
)
KNOWN_FIELDS = sorted(
    {
        "trace_id",
        "type",
        "seq",
        "ts",
        "end_ts",
        "duration_ms",
        "cost_usd",
        "usage",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "turn",
        "labels",
        "meta",
        "agent",
        "model",
        "task",
        "env",
        "tools",
        "outcome",
        "role",
        "content",
        "feedback",
        "call_id",
        "name",
        "arguments",
        "status",
        "claims",
        "candidate_id",
        "parent",
        "round",
        "answer",
        "accepts",
        "votes",
        "verifier",
        "passed",
        "source",
        "pair",
        "orientation",
        "scores",
        "fatal",
        "prefer",
        "confidence",
        "judge",
        "id",
        "text",
        "subject",
        "evidence",
        "kind",
        "ref",
        "targets",
        "benchmark",
        "category",
        "config",
        "description",
        "parameters",
        "read_only",
        "success",
        "reward",
    }
)


# Free-form values: neither validator looks inside them, so mutating their insides tests nothing.
FREE_FORM = {
    "labels",
    "meta",
    "content",
    "x_extra",
    "payload",
    "parameters",
    "config",
    "scores",
    "fatal",
    "arguments",
}


def _nodes(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every (path, node) of an event the validators look at, the root included."""
    out = [(path, value)]
    if path and path[-1] in FREE_FORM:
        return out
    if isinstance(value, dict):
        for k, v in value.items():
            out += _nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _nodes(v, (*path, i))
    return out


def _get(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


@st.composite
def mutated_events(draw: st.DrawFn, values: st.SearchStrategy[Any] = bad_values) -> dict[str, Any]:
    event = copy.deepcopy(draw(valid_events()))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        nodes = _nodes(event)
        path, node = draw(st.sampled_from(nodes))
        op = draw(st.sampled_from(("replace", "delete", "add")))
        # Copies: a drawn value may be the strategy's own object (sampled_from), and a later
        # mutation of this event would change it for every later example — Hypothesis then
        # sees the same choices generate different data (FlakyStrategyDefinition).
        if op == "add" and isinstance(node, dict):
            node[draw(st.sampled_from(KNOWN_FIELDS))] = copy.deepcopy(draw(values))
        elif path and op in ("replace", "delete"):
            parent = _get(event, path[:-1])
            if op == "delete" and isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent[path[-1]] = copy.deepcopy(draw(values))
    return event


def _assert_agree(event: dict[str, Any]) -> None:
    expected, got = validator_paths(event), schema_paths(event)
    assert (expected == set()) == (got == set()), (event, validate_event(event), got)
    # Stronger than the brief's valid/invalid: they also blame the same fields.
    assert expected == got, (event, validate_event(event), got)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_events())
def test_generated_valid_events_are_valid_under_both(event: dict[str, Any]) -> None:
    assert validate_event(event) == []
    assert list(VALIDATOR.iter_errors(event)) == []


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_events())
def test_schema_and_validator_agree_on_mutated_events(event: dict[str, Any]) -> None:
    _assert_agree(event)


def test_mutating_events_never_changes_the_generators_own_values() -> None:
    """Regression: a drawn value can be the strategy's own object (sampled_from hands out its
    elements, like bad_values' `{}`); inserting it uncopied let a later "add" change it for every
    later example, and a fresh clone's run failed with FlakyStrategyDefinition."""
    shared: dict[str, Any] = {}

    def holds(value: Any) -> bool:
        if value is shared:
            return True
        children = value.values() if isinstance(value, dict) else value
        return isinstance(value, dict | list) and any(holds(v) for v in children)

    @settings(max_examples=100, deadline=None, database=None)
    @given(mutated_events(values=st.just(shared)))
    def sample(event: dict[str, Any]) -> None:
        assert not holds(event)

    sample()
    assert shared == {}


def test_mutations_produce_both_outcomes() -> None:
    """Guard against a generator that only ever produces valid (or only invalid) events."""
    outcomes: set[bool] = set()

    @settings(max_examples=200, deadline=None, database=None)
    @given(mutated_events())
    def sample(event: dict[str, Any]) -> None:
        outcomes.add(bool(validator_paths(event)))

    sample()
    assert outcomes == {True, False}


# -- (d) named rejections, with the path validate_event reports ---------------------------------

BASE = {"trace_id": "t-1"}


def rejects_at(event: Any, path: str) -> None:
    """Both reject the event; validate_event names `path`, and so does the schema."""
    assert path in {p for p, _ in validate_event(event)}, validate_event(event)
    assert path in schema_paths(event)


def test_rejects_tool_call_with_string_arguments() -> None:
    rejects_at(
        {
            **BASE,
            "type": "tool_call",
            "name": "cancel_reservation",
            "arguments": '{"reservation_id": "4WQ8ZP"}',
        },
        "$.arguments",
    )


def test_rejects_tool_call_without_arguments() -> None:
    rejects_at({**BASE, "type": "tool_call", "name": "get_user_details"}, "$.arguments")


def test_rejects_event_without_trace_id() -> None:
    rejects_at({"type": "message", "role": "user"}, "$.trace_id")


def test_rejects_null_trace_id() -> None:
    rejects_at({"trace_id": None, "type": "message", "role": "user"}, "$.trace_id")


def test_rejects_trace_id_longer_than_255_characters() -> None:
    assert validate_event({"trace_id": "é" * 255, "type": "x"}) == []
    assert VALIDATOR.is_valid({"trace_id": "é" * 255, "type": "x"})
    rejects_at({"trace_id": "é" * 256, "type": "x"}, "$.trace_id")


def test_rejects_empty_type() -> None:
    rejects_at({**BASE, "type": ""}, "$.type")


def test_rejects_boolean_seq() -> None:
    rejects_at({**BASE, "type": "x", "seq": True}, "$.seq")


def test_rejects_negative_turn() -> None:
    rejects_at({**BASE, "type": "x", "turn": -1}, "$.turn")


@pytest.mark.parametrize(
    "ts",
    [
        "2026-01-31",
        "2026-01-31T12:00:00",
        "31/01/2026 12:00",
        "2026-01-31T12:00:00+0100",
        1769860800,
    ],
)
def test_rejects_timestamp_that_is_not_rfc3339(ts: Any) -> None:
    rejects_at({**BASE, "type": "x", "ts": ts}, "$.ts")


def test_accepts_timing_tokens_and_cost_on_any_event() -> None:
    event = {
        **BASE,
        "type": "message",
        "role": "assistant",
        "content": "hi",
        "ts": "2026-01-31T12:00:00Z",
        "end_ts": "2026-01-31T12:00:01.5Z",
        "duration_ms": 1500,
        "usage": {"input_tokens": 385, "output_tokens": 66, "total_tokens": 451, "cached": 0},
        "cost_usd": 0.002145,
    }
    assert validate_event(event) == []
    assert validate.validate_event_fully(event) == []
    assert VALIDATOR.is_valid(event)


@pytest.mark.parametrize(
    ("field", "value", "path", "message"),
    [
        ("end_ts", "2026-01-31T12:00:00", "$.end_ts", "RFC 3339"),
        ("duration_ms", -1, "$.duration_ms", "expected a number >= 0, found an integer -1"),
        ("duration_ms", "12", "$.duration_ms", 'expected a number, found a string "12"'),
        ("cost_usd", -0.01, "$.cost_usd", "expected a number >= 0, found a number -0.01"),
        ("cost_usd", True, "$.cost_usd", "expected a number, found a boolean"),
        ("usage", 451, "$.usage", "expected an object, found an integer 451"),
        ("usage", {"input_tokens": -3}, "$.usage.input_tokens", "an integer >= 0"),
        ("usage", {"output_tokens": 6.5}, "$.usage.output_tokens", "expected an integer"),
        ("usage", {"total_tokens": "9"}, "$.usage.total_tokens", "expected an integer"),
    ],
)
def test_rejects_bad_timing_tokens_or_cost(field: str, value: Any, path: str, message: str) -> None:
    event = {**BASE, "type": "tool_result", "status": "ok", field: value}
    rejects_at(event, path)
    assert any(p == path and message in m for p, m in validate_event(event)), validate_event(event)


def test_rejects_message_with_unknown_role() -> None:
    rejects_at({**BASE, "type": "message", "role": "tool", "content": "{}"}, "$.role")


def test_rejects_feedback_without_kind() -> None:
    rejects_at(
        {**BASE, "type": "message", "role": "user", "feedback": {"targets": ["c1"]}},
        "$.feedback.kind",
    )


def test_rejects_feedback_target_that_is_not_a_string() -> None:
    rejects_at(
        {
            **BASE,
            "type": "message",
            "role": "user",
            "feedback": {"kind": "challenge", "targets": ["c1", 2]},
        },
        "$.feedback.targets[1]",
    )


def test_rejects_tool_result_with_unknown_status() -> None:
    rejects_at({**BASE, "type": "tool_result", "status": "failed"}, "$.status")


def test_rejects_claim_confidence_above_one() -> None:
    rejects_at(
        {**BASE, "type": "claims", "claims": [{"id": "c1", "confidence": 1.2}]},
        "$.claims[0].confidence",
    )


def test_rejects_evidence_of_unknown_kind() -> None:
    rejects_at(
        {
            **BASE,
            "type": "claims",
            "claims": [
                {"id": "c1", "evidence": [{"kind": "test", "passed": True}, {"kind": "vibes"}]}
            ],
        },
        "$.claims[0].evidence[1].kind",
    )


def test_rejects_header_tool_without_name() -> None:
    rejects_at(
        {**BASE, "type": "trace", "tools": [{"description": "looks up a user"}]}, "$.tools[0].name"
    )


def test_rejects_boolean_task_id() -> None:
    rejects_at({**BASE, "type": "trace", "task": {"id": False}}, "$.task.id")


def test_rejects_verification_with_negative_votes() -> None:
    rejects_at(
        {**BASE, "type": "verification", "candidate_id": "r0", "accepts": 0, "votes": -1}, "$.votes"
    )


def test_rejects_check_without_passed() -> None:
    rejects_at({**BASE, "type": "check", "name": "hidden_tests"}, "$.passed")


def test_rejects_check_with_null_passed() -> None:
    rejects_at({**BASE, "type": "check", "name": "hidden_tests", "passed": None}, "$.passed")


def test_rejects_judgment_with_lowercase_orientation() -> None:
    rejects_at({**BASE, "type": "judgment", "pair": "p1", "orientation": "ab"}, "$.orientation")


def test_rejects_line_that_is_not_an_object() -> None:
    rejects_at([{"trace_id": "t-1", "type": "x"}], "$")


def test_event_without_type_gets_no_per_type_rules() -> None:
    event = {**BASE, "status": "failed", "role": "robot", "passed": "yes"}
    assert {p for p, _ in validate_event(event)} == {"$.type"}
    assert schema_paths(event) == {"$.type"}


def test_accepts_unknown_type_and_unknown_fields() -> None:
    event = {
        **BASE,
        "type": "guardrail",
        "rule": "no_write_without_lookup",
        "seq": 3,
        "arguments": "not checked: only tool_call has arguments",
    }
    assert validate_event(event) == []
    assert VALIDATOR.is_valid(event)


# -- the rules a schema cannot express, pinned ------------------------------------------------


def test_accepts_above_votes_is_rejected_only_by_the_validator() -> None:
    event = {**BASE, "type": "verification", "candidate_id": "r0", "accepts": 4, "votes": 3}
    assert [p for p, _ in validate_event(event)] == ["$.accepts"]
    assert VALIDATOR.is_valid(event)  # inexpressible in JSON Schema


def test_duplicate_claim_id_is_rejected_only_by_the_validator() -> None:
    event = {**BASE, "type": "claims", "claims": [{"id": "c1"}, {"id": "c1", "text": "again"}]}
    assert [p for p, _ in validate_event(event)] == ["$.claims[1].id"]
    assert VALIDATOR.is_valid(event)  # inexpressible in JSON Schema


def test_integral_float_is_an_integer_only_to_the_schema() -> None:
    event = {**BASE, "type": "x", "seq": 1.0}
    assert [p for p, _ in validate_event(event)] == ["$.seq"]
    assert VALIDATOR.is_valid(event)  # JSON Schema: 1.0 is an integer


# In Python `$` also matches before a final newline and `\d` matches any Unicode digit, while
# ECMA-262 engines (ajv) do neither: validate.py uses [0-9] and fullmatch so both agree.
def test_rejects_timestamp_with_trailing_newline() -> None:
    # Python's jsonschema applies `pattern` with re.search, where `$` still matches before a
    # final newline; an ECMA-262 engine rejects it, and so does validate_event.
    event = {**BASE, "type": "x", "ts": "2026-01-31T12:00:00Z\n"}
    assert "$.ts" in {p for p, _ in validate_event(event)}


def test_rejects_timestamp_with_non_ascii_digits() -> None:
    rejects_at({**BASE, "type": "x", "ts": "٢٠٢٦-01-31T12:00:00Z"}, "$.ts")


def test_rejects_seq_beyond_the_database_integer() -> None:
    rejects_at({**BASE, "type": "x", "seq": 2**31}, "$.seq")
    assert validate_event({**BASE, "type": "x", "seq": 2**31 - 1}) == []
