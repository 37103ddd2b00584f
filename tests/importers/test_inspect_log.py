"""Inspect AI eval logs written by inspect_ai itself (tests/importers/inspect_samples.py: a real
`eval()` against Inspect's scripted mock model), read back through inspect_ai's log reader."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_examples
from traces.importers import detect

from ._helpers import check_fuzzed, check_invariants, roundtrip, run, validate_all
from .fuzz import mutate
from .inspect_samples import write_log


@functools.cache
def log_bytes(fmt: str) -> tuple[str, bytes]:
    path = write_log(Path(tempfile.mkdtemp(prefix="inspect-logs-")), fmt)
    return path.name, path.read_bytes()


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_samples_become_messages_calls_results_and_outcomes(fmt):
    name, data = log_bytes(fmt)
    assert detect(data[:65536], name) == "inspect_ai"
    assert detect(data[:65536], "") == "inspect_ai"
    events, report = run("inspect_ai", data)
    assert report.errors == []
    traces = check_invariants(events)
    assert set(traces) == {"inspect:weather:paris:epoch1", "inspect:weather:atlantis:epoch1"}
    paris = traces["inspect:weather:paris:epoch1"]
    assert [(e["type"], e.get("role")) for e in paris] == [
        ("trace", None),
        ("message", "system"),
        ("message", "user"),
        ("message", "assistant"),
        ("tool_call", None),
        ("tool_result", None),
        ("message", "assistant"),
    ]
    head = paris[0]
    assert (head["agent"], head["model"], head["task"]["id"]) == (
        "weather",
        "mockllm/model",
        "paris",
    )
    assert (head["outcome"]["success"], head["outcome"]["reward"]) == (True, 1.0)
    assert head["outcome"]["details"]["includes"]["value"] == "C"
    call, result = paris[4], paris[5]
    assert (call["name"], call["arguments"]) == ("get_weather", {"city": "Paris"})
    assert (result["call_id"], result["status"]) == (call["call_id"], "ok")
    atlantis = traces["inspect:weather:atlantis:epoch1"]
    assert atlantis[0]["outcome"]["success"] is False
    err = atlantis[5]
    assert err["status"] == "error" and "unknown city Atlantis" in err["content"]
    roundtrip(events)
    validate_all(events)


def test_a_file_inspect_cannot_read_is_one_error_naming_the_reader():
    _, data = log_bytes("json")
    doc = orjson.loads(data)
    doc["samples"][0]["messages"] = "not a list"
    events, report = run("inspect_ai", orjson.dumps(doc))
    assert events == []
    [err] = report.errors
    assert (err.line, err.path) == (0, "$")
    assert err.message.startswith("expected an Inspect AI eval log that inspect_ai can read")


@settings(
    max_examples=fuzz_examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_fuzz_never_raises_and_errors_name_line_and_path(data):
    _, raw = log_bytes("json")
    doc = orjson.loads(raw)
    doc["samples"] = doc["samples"][:1]
    events, report = run("inspect_ai", mutate(data, doc))
    check_fuzzed(events, report)
    for err in report.errors:
        assert err.line >= 0 and err.path.startswith("$")


def test_a_result_whose_call_was_lost_is_kept_and_marked_unpaired():
    """CI's fuzz found it: without its role, inspect_ai reads the calling assistant message as
    a system message and drops its tool calls; the tool's answer is then a result without a
    call — kept, and marked as v1 marks one (meta.unpaired), never a dangling pair."""
    _, raw = log_bytes("json")
    doc = orjson.loads(raw)
    doc["samples"] = doc["samples"][:1]
    calling = doc["samples"][0]["messages"][2]
    assert calling["role"] == "assistant" and calling["tool_calls"]
    del calling["role"]
    events, report = run("inspect_ai", orjson.dumps(doc))
    check_fuzzed(events, report)
    [result] = [se.event for se in events if se.event["type"] == "tool_result"]
    assert result["meta"]["unpaired"] is True and result["status"] == "error"
    assert result["call_id"] == calling["tool_calls"][0]["id"]
    assert not [se for se in events if se.event["type"] == "tool_call"]
