from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_examples
from tests.real_data import need_full
from traces.importers import detect

from ._helpers import (
    DATA,
    check_fuzzed,
    check_invariants,
    roundtrip,
    run,
    validate_all,
)
from .fuzz import mutate

TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
TAU2 = sorted((DATA / "tau2-bench").glob("*.json"))


def _raw_counts(path):
    """Records, tool calls and tool messages counted with the stdlib json module."""
    doc = json.loads(path.read_text())
    records = doc if isinstance(doc, list) else doc["simulations"]
    messages = [m for r in records for m in (r.get("traj") or r.get("messages") or [])]
    calls = sum(len(m.get("tool_calls") or []) for m in messages)
    results = sum(m["role"] == "tool" for m in messages)
    return len(records), calls, results


@pytest.mark.parametrize("path", [TAU, *TAU2], ids=lambda p: p.name)
def test_every_real_record_imports(path):
    n_records, n_calls, n_results = _raw_counts(path)
    assert detect(path.read_bytes()[:65536], path.name) == "tau_bench"
    events, report = run("tau_bench", path)
    assert report.errors == []
    traces = check_invariants(events)
    assert len(traces) == n_records
    types = [se.event["type"] for se in events]
    assert types.count("tool_call") == n_calls
    assert types.count("tool_result") == n_results
    assert report.flags.get("tool_result_unpaired", 0) == 0
    for evs in traces.values():
        header = evs[0]
        assert header["outcome"]["success"] == (header["outcome"]["reward"] >= 1 - 1e-6)
        assert header["task"]["instruction"]
        assert "expected_actions" in header["task"]
    roundtrip(events)
    validate_all(events)


def test_tau_record_mapping():
    need_full()  # the counts of successes and of runs without reward_info are the full file's
    events, report = run("tau_bench", TAU)
    traces = check_invariants(events)
    first = traces["tau-bench:airline:task0:trial0"]
    header = first[0]
    assert header["model"] == "gpt-4o"
    assert header["task"]["expected_actions"][0]["name"] == "book_reservation"
    assert header["outcome"] == {
        "success": False,
        "reward": 0.0,
        "details": header["outcome"]["details"],
    }
    assert header["outcome"]["details"]["info"]["r_actions"] == 0.0
    assert first[1] == {
        "trace_id": header["trace_id"],
        "type": "message",
        "seq": 1,
        "turn": 0,
        "role": "system",
        "content": first[1]["content"],
    }
    # gpt-4o reused call ids; each call still pairs with the result that followed it.
    reused = [e for e in first if e.get("meta", {}).get("source_call_id")]
    assert reused and all("#" in e["call_id"] for e in reused if e["type"] == "tool_call")
    errors = [e for e in first if e["type"] == "tool_result" and e["status"] == "error"]
    assert errors[0]["content"].startswith("Error: payment amount does not add up")
    assert first[-1]["type"] == "check" and first[-1]["name"] == "r_actions"
    assert report.flags["reward_info_missing"] == 5  # 5 runs ended without reward_info
    assert sum(h[0]["outcome"]["success"] for h in traces.values()) == 84


def test_tau2_simulation_mapping():
    path = DATA / "tau2-bench" / "telecom_grok-3.json"
    events, _ = run("tau_bench", path)
    traces = check_invariants(events)
    task = "[mobile_data_issue]data_mode_off|data_usage_exceeded[PERSONA:None]"
    tid = f"tau2-bench:telecom:task{task}:trial0"
    evs = traces[tid]
    assert evs[0]["agent"] == "llm_agent" and evs[0]["model"] == "xai/grok-3"
    assert evs[0]["task"]["expected_actions"][0]["name"] == "toggle_data"
    assert evs[1]["role"] == "system"  # the policy from info.environment_info
    user_calls = [
        e for e in evs if e["type"] == "tool_call" and e["meta"].get("requestor") == "user"
    ]
    assert user_calls, "the telecom user acts on the device through tool calls"
    checks = {e["name"]: e["passed"] for e in evs if e["type"] == "check"}
    assert checks["db_match"] is False and checks["action_checks[1]:refuel_data"] is True


def _doc(records):
    return orjson.dumps(records)


def test_truncated_document_is_one_error():
    events, report = run("tau_bench", TAU.read_bytes()[:5000])
    assert events == []
    [err] = report.errors
    assert err.line == 0 and err.path == "$" and "invalid JSON" in err.message


def test_bad_records_are_errors_and_others_import():
    good = json.loads(TAU.read_text())[:3]
    bad_reward = {**good[1], "reward": "1"}
    no_traj = {k: v for k, v in good[2].items() if k != "traj"}
    events, report = run(
        "tau_bench", _doc([good[0], bad_reward, no_traj, 7]), name="gpt-4o-airline.json"
    )
    assert {e.event["trace_id"] for e in events} == {"tau-bench:airline:task0:trial0"}
    got = [(e.line, e.path, e.message) for e in report.errors]
    assert got[0] == (2, "$[1].reward", "expected a number, found 1")
    assert (
        got[1][:2] == (3, "$[2].traj")
        and "expected an array of messages, found nothing" in got[1][2]
    )
    assert got[2][:2] == (4, "$[3]") and "found number" in got[2][2]


def test_duplicate_trial_is_rejected():
    good = json.loads(TAU.read_text())[:1]
    events, report = run("tau_bench", _doc(good + good))
    assert report.errors[0].line == 2 and "second one" in report.errors[0].message


def test_tau2_missing_reward_info_is_error():
    doc = json.loads(TAU2[0].read_text())
    del doc["simulations"][0]["reward_info"]
    events, report = run("tau_bench", _doc(doc))
    [err] = report.errors
    assert err.line == 1 and err.path == "$.simulations[0].reward_info"
    assert len({e.event["trace_id"] for e in events}) == len(doc["simulations"]) - 1


SAMPLE_TAU = json.loads(TAU.read_text())[0]
SAMPLE_TAU2 = json.loads(TAU2[0].read_text())
SAMPLE_TAU2["simulations"] = SAMPLE_TAU2["simulations"][:1]


@settings(
    max_examples=fuzz_examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_fuzz_tau_never_raises(data):
    events, report = run("tau_bench", mutate(data, [SAMPLE_TAU], jsonl=False))
    check_fuzzed(events, report)


@settings(
    max_examples=fuzz_examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_fuzz_tau2_never_raises(data):
    events, report = run("tau_bench", mutate(data, SAMPLE_TAU2, jsonl=False))
    check_fuzzed(events, report)
