from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_examples
from traces.importers import detect
from traces.importers.bfcl import CATEGORIES, load_tasks, parse_call_string
from traces.samples.bfcl import MODEL, build_record, write_samples

from ._helpers import (
    check_fuzzed,
    check_invariants,
    count_jsonl,
    roundtrip,
    run,
    validate_all,
)
from .fuzz import mutate

pytest.importorskip("bfcl_eval")


@pytest.fixture(scope="module")
def sample_files(tmp_path_factory):
    return write_samples(tmp_path_factory.mktemp("bfcl"), per_category=8, seed=0)


def _raw_calls(records):
    return sum(
        len(item)
        for r in records
        for turn in r["result"]
        for step in turn
        if isinstance(step, list)
        for item in step
    )


def test_generated_files_import_with_expected_counts(sample_files):
    assert {p.name for p in sample_files} == {
        f"BFCL_v4_multi_turn_{c}_result.json" for c in CATEGORIES
    }
    flags: dict[str, int] = {}
    for path in sample_files:
        records = [json.loads(line) for line in path.read_text().splitlines()]
        assert detect(path.read_bytes()[:65536], path.name) == "bfcl"
        events, report = run("bfcl", path)
        assert report.errors == []
        traces = check_invariants(events)
        assert len(traces) == count_jsonl(path) == len(records)
        types = [se.event["type"] for se in events]
        assert types.count("tool_call") == _raw_calls(records)
        executed = sum(
            e["role"] == "tool"
            for r in records
            for log in r["inference_log"]
            if isinstance(log, dict)
            for k, step in log.items()
            if k != "begin_of_turn_query"
            for e in step
        )
        assert types.count("tool_result") == executed
        for rec in records:
            evs = traces[f"bfcl:{rec['id']}"]
            header = evs[0]
            assert header["model"] == MODEL
            assert (
                header["env"]["config"]["initial_config"]
                == load_tasks()[rec["id"]]["initial_config"]
            )
            assert header["labels"]["ground_truth"] == load_tasks()[rec["id"]]["ground_truth"]
            assert max(e.get("turn", 0) for e in evs) == len(rec["result"]) - 1
        for key, n in report.flags.items():
            flags[key] = flags.get(key, 0) + n
        roundtrip(events)
        validate_all(events)
    # Every perturbation of the generator shows up as a flag somewhere in the sample set.
    assert flags.get("malformed_function_name") and flags.get("malformed_arguments")
    assert flags.get("tool_call_not_executed") == flags["malformed_arguments"]


def test_ground_truth_run_maps_cleanly():
    task = load_tasks()["multi_turn_base_0"]
    record, applied = build_record(task, perturb=False)
    assert applied == []
    events, report = run(
        "bfcl", orjson.dumps(record) + b"\n", name="BFCL_v4_multi_turn_base_result.json"
    )
    assert report.errors == [] and report.flags == {}
    evs = [se.event for se in events]
    calls = [e for e in evs if e["type"] == "tool_call"]
    assert [c["name"] for c in calls] == [
        parse_call_string(c)[0] for turn in task["ground_truth"] for c in turn
    ]
    assert calls[0] == {
        "trace_id": "bfcl:multi_turn_base_0",
        "type": "tool_call",
        "seq": 2,
        "turn": 0,
        "call_id": "t0.s0.c0",
        "name": "cd",
        "arguments": {"folder": "document"},
        "meta": {"step": 0, "handler_log": "Successfully decoded model response."},
        # the step's model call: its latency and tokens, recorded per step
        "duration_ms": record["latency"][0][0] * 1000,
        "usage": {
            "input_tokens": record["input_token_count"][0][0],
            "output_tokens": record["output_token_count"][0][0],
        },
    }
    results = [e for e in evs if e["type"] == "tool_result"]
    assert results[0]["call_id"] == "t0.s0.c0" and "document" in results[0]["content"]
    assert {t["name"] for t in evs[0]["tools"]} >= {"cd", "mv", "post_tweet"}
    assert evs[0]["tools"][0]["parameters"]["type"] == "object"  # BFCL "dict" → JSON Schema
    assert evs[0]["meta"]["state_log"][0]["after_turn"] == -1
    check_invariants(events)


def test_perturbations_are_kept_and_flagged():
    tasks = load_tasks()
    found = {}
    for i in range(40):
        record, applied = build_record(tasks[f"multi_turn_base_{i}"], seed=1)
        events, report = run("bfcl", orjson.dumps(record) + b"\n")
        evs = [se.event for se in events]
        for p in applied:
            found.setdefault(p, (evs, report))
    assert set(found) == {"extra_ls", "repeated_failure", "malformed_name", "broken_arguments"}
    evs, report = found["malformed_name"]
    bad = [e for e in evs if e.get("meta", {}).get("malformed_name")]
    assert bad and bad[0]["type"] == "tool_call"
    result = next(
        e for e in evs if e["type"] == "tool_result" and e["call_id"] == bad[0]["call_id"]
    )
    assert result["status"] == "error" and result["content"].startswith("Error during execution")
    evs, report = found["broken_arguments"]
    broken = next(e for e in evs if "raw_arguments" in e.get("meta", {}))
    assert broken["arguments"] == {} and broken["meta"]["not_executed"] is True
    assert broken["meta"]["handler_error"]
    evs, _ = found["repeated_failure"]
    failing = [e for e in evs if e["type"] == "tool_result" and "unexpected_option" in e["content"]]
    assert len(failing) == 2 and all(e["status"] == "error" for e in failing)


def test_prompting_model_text_is_decoded_into_calls():
    record = {
        "id": "multi_turn_base_1",
        "result": [["[ls(a=True)]", "Done"]],
        "inference_log": [
            {
                "begin_of_turn_query": [{"role": "user", "content": "list"}],
                "step_0": [
                    {"role": "assistant", "content": "[ls(a=True)]"},
                    {
                        "role": "handler_log",
                        "content": "ok",
                        "model_response_decoded": ["ls(a=True)"],
                    },
                    {"role": "tool", "content": '{"current_directory_content": []}'},
                ],
                "step_1": [{"role": "assistant", "content": "Done"}],
            }
        ],
    }
    events, report = run("bfcl", orjson.dumps(record) + b"\n")
    evs = [se.event for se in events]
    assert [e["type"] for e in evs] == [
        "trace",
        "message",
        "message",
        "tool_call",
        "tool_result",
        "message",
    ]
    assert evs[3]["name"] == "ls" and evs[3]["arguments"] == {"a": True}
    assert evs[4]["call_id"] == evs[3]["call_id"]
    assert report.errors == []


def test_inference_error_record_is_kept_as_failed_run():
    record = {
        "id": "multi_turn_base_2",
        "result": "Error during inference: timeout",
        "traceback": "Trace…",
    }
    events, report = run("bfcl", orjson.dumps(record) + b"\n")
    [header] = [se.event for se in events]
    assert header["outcome"]["success"] is False
    assert header["meta"]["inference_error"] == "Error during inference: timeout"
    assert report.flags["inference_error"] == 1


def test_unknown_test_and_missing_log_are_flagged_not_dropped():
    record = {"id": "multi_turn_base_99999", "result": [[[{"cd": '{"folder": "x"}'}]]]}
    events, report = run("bfcl", orjson.dumps(record) + b"\n")
    assert [se.event["type"] for se in events] == ["trace", "message", "tool_call"]
    assert report.flags["task_not_found"] == 1 and report.flags["no_inference_log"] == 1


@pytest.mark.parametrize(
    "record, path, message",
    [
        ({"id": "simple_python_1", "result": []}, "$.id", "expected a multi-turn test id"),
        ({"id": 5, "result": []}, "$.id", "expected a test id string, found number"),
        ({"id": "multi_turn_base_0"}, "$.result", "found nothing"),
        ({"id": "multi_turn_base_0", "result": {"a": 1}}, "$.result", "expected an array of turns"),
        (
            {"id": "multi_turn_base_0", "result": [[], "x"]},
            "$.result[1]",
            "expected an array of steps, found string",
        ),
        (
            {"id": "multi_turn_base_0", "result": [], "inference_log": {}},
            "$.inference_log",
            "expected an array",
        ),
    ],
)
def test_bad_records_are_errors(record, path, message):
    events, report = run("bfcl", orjson.dumps(record) + b"\n")
    assert events == []
    [err] = report.errors
    assert err.path == path and message in err.message and err.line == 1


def test_truncated_line_and_duplicates():
    record, _ = build_record(load_tasks()["multi_turn_base_3"], perturb=False)
    line = orjson.dumps(record) + b"\n"
    events, report = run("bfcl", line + line[:100] + b"\n" + line)
    assert len({se.event["trace_id"] for se in events}) == 1
    assert [(e.line, e.path) for e in report.errors] == [(2, "$"), (3, "$.id")]


def test_sniff_by_content_when_first_line_exceeds_head():
    record, _ = build_record(load_tasks()["multi_turn_long_context_0"], perturb=False)
    blob = orjson.dumps(record)
    assert len(blob) > 65536
    assert detect(blob[:65536], "upload.jsonl") == "bfcl"


def test_parse_call_string_never_evaluates():
    assert parse_call_string("cd(folder='a')") == ("cd", {"folder": "a"})
    assert parse_call_string("sort('x.pdf')") == ("sort", {"_0": "x.pdf"})
    assert parse_call_string("__import__('os').system('x')") is None
    assert parse_call_string("cd(folder=open('f'))") is None
    assert parse_call_string("not a call") is None


SAMPLE = build_record(load_tasks()["multi_turn_base_5"], seed=2)[0]


@settings(
    max_examples=fuzz_examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_fuzz_never_raises(data):
    events, report = run("bfcl", mutate(data, SAMPLE))
    check_fuzzed(events, report)
