"""Timing, tokens and cost from each format that records them, on real files: τ²-bench
(per-message timestamp, usage and cost; the simulation's start, end, duration and costs),
OTLP spans (OpenInference, Langfuse), Inspect logs, BFCL result records, OpenAI chat usage.
What a source does not record stays absent (τ-bench, LDB, SYCON-Bench), and a value v1 cannot
take is kept in meta and flagged, never dropped and never guessed."""

from __future__ import annotations

import json
from datetime import datetime

import orjson
import pytest

from tests.importers._helpers import DATA, run, traces_of
from tests.importers.otlp_samples import langfuse_spans, openinference_spans, otlp_json
from traces.samples.bfcl import generate
from traces.totals import TIMING_KEYS, totals_of
from traces.validate import validate_event


def _valid(traces: dict[str, list[dict]]) -> None:
    for events in traces.values():
        for ev in events:
            assert validate_event(orjson.loads(orjson.dumps(ev))) == [], ev


@pytest.mark.parametrize("name", ["airline_grok-3.json", "telecom_grok-3.json"])
def test_tau2_messages_carry_their_timestamp_usage_and_cost(name):
    path = DATA / "tau2-bench" / name
    doc = orjson.loads(path.read_bytes())
    events, report = run("tau_bench", path)
    traces = traces_of(events)
    _valid(traces)
    assert len(traces) == len(doc["simulations"])
    for sim in doc["simulations"]:
        tid = f"tau2-bench:{name.split('_')[0]}:task{sim['task_id']}:trial{sim['trial']}"
        evs = traces[tid]
        head = evs[0]
        assert head["duration_ms"] == pytest.approx(sim["duration"] * 1000)
        assert head["ts"] == sim["start_time"] + "Z" and head["end_ts"] == sim["end_time"] + "Z"
        assert head["cost_usd"] == pytest.approx(sim["agent_cost"] + sim["user_cost"])
        assert (head["meta"]["agent_cost"], head["meta"]["user_cost"]) == (
            sim["agent_cost"],
            sim["user_cost"],
        )
        # the messages' costs add up to the simulation's: each model call counted once
        assert sum(e.get("cost_usd", 0) for e in evs[1:]) == pytest.approx(head["cost_usd"])
        usages = [m["usage"] for m in sim["messages"] if m.get("usage")]
        got = [e["usage"] for e in evs if "usage" in e]
        assert got == [
            {"input_tokens": u["prompt_tokens"], "output_tokens": u["completion_tokens"]}
            for u in usages
        ]
        totals = totals_of(evs)
        assert totals["input_tokens"] == sum(u["prompt_tokens"] for u in usages)
        assert totals["duration_ms"] == pytest.approx(sim["duration"] * 1000)
    # no longer reported as unmapped; the read-as-UTC assumption is counted, not hidden
    for key in ("simulation.start_time", "simulation.agent_cost", "message.usage", "message.cost"):
        assert key not in report.unmapped
    assert report.flags["timestamp_without_offset_read_as_utc"] > 0


def test_a_tau2_message_without_usage_gets_none_and_a_bad_cost_is_kept_in_meta():
    doc = orjson.loads((DATA / "tau2-bench" / "airline_grok-3.json").read_bytes())
    doc["simulations"] = doc["simulations"][:1]
    messages = doc["simulations"][0]["messages"]
    assert messages[0]["usage"] is None  # the agent's scripted greeting: no model call
    messages[1]["cost"] = -1
    messages[1]["timestamp"] = "yesterday"
    events, report = run("tau_bench", orjson.dumps(doc), "airline_grok-3.json")
    [evs] = traces_of(events).values()
    _valid({"t": evs})
    greeting = evs[2]
    assert "usage" not in greeting and greeting["cost_usd"] == 0.0
    bad = evs[3]
    assert "cost_usd" not in bad and bad["meta"]["cost"] == -1
    assert "ts" not in bad and bad["meta"]["timestamp"] == "yesterday"
    assert report.flags["cost_usd_unusable"] == 1 and report.flags["timestamp_unreadable"] == 1


@pytest.mark.parametrize(
    "path", ["tau-bench/gpt-4o-airline.json", "ldb/mbpp_ldb_gpt-3.5-turbo-0613.jsonl"]
)
def test_files_without_timing_give_traces_without_it(path):
    fmt = "tau_bench" if path.startswith("tau") else "repair_runs"
    events, _ = run(fmt, DATA / path)
    traces = traces_of(events)
    assert traces
    for evs in traces.values():
        assert not any(TIMING_KEYS & ev.keys() for ev in evs)
        assert set(totals_of(evs).values()) == {None}


def test_openinference_spans_give_times_tokens_and_cost():
    events, report = run("otlp", otlp_json(openinference_spans()))
    traces = traces_of(events)
    _valid(traces)
    assert len(traces) == 2
    for evs in traces.values():
        head = evs[0]
        start, end = (datetime.fromisoformat(head[k]) for k in ("ts", "end_ts"))
        assert head["duration_ms"] == pytest.approx((end - start).total_seconds() * 1000, abs=1e-3)
        call = next(e for e in evs if e["type"] == "tool_call")
        assert call["usage"] == {"input_tokens": 112, "output_tokens": 18, "total_tokens": 130}
        assert call["cost_usd"] == 0.00046 and call["duration_ms"] > 0
        result = next(e for e in evs if e["type"] == "tool_result")
        assert result["ts"] >= call["end_ts"] and "usage" not in result
        final = evs[-1]
        assert final["usage"] == {"input_tokens": 160, "output_tokens": 9}
        assert "cost_usd" not in final  # the span records none: not 0
        totals = totals_of(evs)
        assert (totals["input_tokens"], totals["output_tokens"], totals["total_tokens"]) == (
            272,
            27,
            299,
        )
        assert totals["cost_usd"] == 0.00046
        spans = head["meta"]["otel"]["spans"]
        assert not any("llm.token_count.prompt" in s["attributes"] for s in spans)
    assert not any("token_count" in k or "llm.cost" in k for k in report.unmapped)


def test_langfuse_generation_usage_and_cost_details():
    events, report = run("otlp", otlp_json(langfuse_spans()))
    [evs] = traces_of(events).values()
    _valid({"t": evs})
    final = evs[-1]
    assert final["usage"] == {"input_tokens": 210, "output_tokens": 11}
    assert final["cost_usd"] == pytest.approx(0.000795)
    first_call = next(e for e in evs if e["type"] == "tool_call")
    assert "usage" not in first_call and "cost_usd" not in first_call
    assert "span attribute langfuse.observation.usage_details" not in report.unmapped


def test_genai_usage_attributes_and_a_span_without_times():
    doc = orjson.loads(otlp_json(openinference_spans(("Paris",))))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    llm = next(s for s in spans if s["name"] == "ChatCompletion")
    llm["attributes"] = [
        a for a in llm["attributes"] if not a["key"].startswith(("llm.token_count", "llm.cost"))
    ] + [
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "31"}},
        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "7"}},
    ]
    llm["startTimeUnixNano"] = "0"
    events, _ = run("otlp", orjson.dumps(doc))
    [evs] = traces_of(events).values()
    _valid({"t": evs})
    call = next(e for e in evs if e["type"] == "tool_call")
    assert call["usage"] == {"input_tokens": 31, "output_tokens": 7}
    assert "ts" not in call and "duration_ms" not in call and "end_ts" in call


def test_a_span_time_past_the_year_9999_is_kept_and_flagged_not_a_crash():
    """A `*TimeUnixNano` no calendar date holds (found by the OTLP fuzz test: 2.5e20 ns, the
    year 10000) is kept in the event's meta and flagged unreadable; no duration comes from it."""
    doc = orjson.loads(otlp_json(openinference_spans(("Paris",))))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    llm = next(s for s in spans if s["name"] == "ChatCompletion")
    llm["startTimeUnixNano"] = "253402300800000000000"
    events, report = run("otlp", orjson.dumps(doc))
    assert report.errors == []
    [evs] = traces_of(events).values()
    _valid({"t": evs})
    # the span sorts last by its start; its first output is the event that keeps the raw time
    [call] = [e for e in evs if "ts" in e.get("meta", {})]
    assert call["type"] == "tool_call" and call["meta"]["ts"] == "253402300800000000000"
    assert "ts" not in call and "duration_ms" not in call and "end_ts" in call
    assert report.flags["timestamp_unreadable"] >= 1


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_inspect_samples_carry_model_usage_and_times(tmp_path, fmt):
    from tests.importers.inspect_samples import write_log

    path = write_log(tmp_path, fmt)
    events, _ = run("inspect_ai", path)
    traces = traces_of(events)
    _valid(traces)
    assert len(traces) == 2
    for evs in traces.values():
        head = evs[0]
        assert head["usage"]["total_tokens"] > 0 and head["duration_ms"] > 0
        assert head["meta"]["working_time_ms"] >= 0
        assert "cost_usd" not in head  # the mock model records no cost
        answers = [e for e in evs if e["type"] == "message" and e["role"] == "assistant"]
        assert all("usage" in a and a["end_ts"] >= a["ts"] for a in answers)
        assert sum(a["usage"]["total_tokens"] for a in answers) == head["usage"]["total_tokens"]
        assert all("ts" in e for e in evs if e["type"] == "tool_result")


def _flat(x):  # type: ignore[no-untyped-def]
    return sum(map(_flat, x)) if isinstance(x, list) else x


def test_bfcl_records_put_tokens_and_latency_on_their_steps():
    """One value per model call: each on its step's first event, the header states none, and
    the trace's totals are the sums of the lists (tests/importers/test_bfcl_step_figures for
    the real records and the fallback)."""
    records = next(iter(generate(("base",), per_category=2).values()))
    data = b"".join(orjson.dumps(r) + b"\n" for r in records)
    events, report = run("bfcl", data, "BFCL_v4_multi_turn_base_result.json")
    traces = traces_of(events)
    _valid(traces)
    for record in records:
        [evs] = [v for k, v in traces.items() if k.endswith(record["id"])]
        head = evs[0]
        assert "usage" not in head and "duration_ms" not in head
        timed = [e for e in evs if "duration_ms" in e]
        assert [e["duration_ms"] for e in timed] == pytest.approx(
            [v * 1000 for turn in record["latency"] for v in turn]
        )
        assert [e["usage"]["input_tokens"] for e in timed] == [
            v for turn in record["input_token_count"] for v in turn
        ]
        totals = totals_of(evs)
        assert totals["input_tokens"] == _flat(record["input_token_count"])
        assert totals["output_tokens"] == _flat(record["output_token_count"])
        assert totals["duration_ms"] == pytest.approx(_flat(record["latency"]) * 1000)
        assert head["meta"]["latency"] == record["latency"]  # the per-step figures, as recorded


@pytest.mark.parametrize(
    ("latency", "why"),
    [
        ([[1.5, "slow"]], "1 turns of values for the result's 4 turns"),
        ([[1.5, "slow", 1, 1], [1, 1, 1], [1, 1], [1] * 6], "turn 0 step 1 is 'slow'"),
    ],
)
def test_bfcl_latency_that_is_not_numbers_gives_no_duration(latency, why):
    record = next(iter(generate(("base",), per_category=1).values()))[0]
    assert [len(turn) for turn in record["result"]] == [4, 3, 2, 6]
    record["latency"] = latency
    events, report = run(
        "bfcl", orjson.dumps(record) + b"\n", "BFCL_v4_multi_turn_base_result.json"
    )
    [evs] = traces_of(events).values()
    assert all("duration_ms" not in e for e in evs)
    assert why in evs[0]["meta"]["step_figures_unmatched"]["latency"]
    assert totals_of(evs)["duration_ms"] is None and totals_of(evs)["input_tokens"] > 0
    assert report.notes


def test_openai_chat_usage_per_record_and_per_message():
    record = {
        "id": "r1",
        "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55},
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello", "usage": {"prompt_tokens": 50,
             "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 0}}},
        ],
    }  # fmt: skip
    events, report = run("openai_chat", json.dumps(record).encode() + b"\n")
    [evs] = traces_of(events).values()
    _valid({"t": evs})
    assert evs[0]["usage"] == {"input_tokens": 50, "output_tokens": 5, "total_tokens": 55}
    assert evs[-1]["usage"] == {
        "prompt_tokens_details": {"cached_tokens": 0},
        "input_tokens": 50,
        "output_tokens": 5,
    }
    assert "record.usage" not in report.unmapped
    totals = totals_of(evs)
    assert totals["total_tokens"] == 55  # the header's figure, not header + message


def test_usage_that_is_not_a_count_is_kept_in_meta():
    record = {"messages": [{"role": "assistant", "content": "x", "usage": {"prompt_tokens": -2}}]}
    events, report = run("openai_chat", json.dumps(record).encode() + b"\n")
    [evs] = traces_of(events).values()
    assert "usage" not in evs[-1] and evs[-1]["meta"]["usage"] == {"prompt_tokens": -2}
    assert report.flags["usage_unusable"] == 1


def test_durations_and_costs_past_any_real_value_are_unusable():
    """Infinite, or past MAX_AMOUNT (a BFCL latency of 1e14 s becomes 1e17 ms): a broken
    record's value, kept in meta by the callers, never stored as a figure JSON cannot hold."""
    from traces.importers._timing import MAX_AMOUNT, amount

    assert amount(float("inf")) is None and amount(float("nan")) is None
    assert amount(10**30) is None and amount(MAX_AMOUNT * 2) is None
    assert amount(0) == 0 and amount(12.5) == 12.5 and amount(MAX_AMOUNT) == MAX_AMOUNT
