"""BFCL's per-model-call latency and token counts go on the steps they belong to
(`traces.importers._bfcl_usage`), on real records (gpt-4o-2024-08-06-FC, NOTICE in
tests/data/real/bfcl-v3-2024): each step's first event carries its call's figures, the header
states none, and the trace's totals are the lists' sums, counted once. Lists of another shape
than the steps stay on the header, with the reason in the report."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest

from traces.importers._bfcl_usage import NOTE
from traces.totals import totals_of
from traces.validate import validate_event

from ._helpers import run, traces_of

pytest.importorskip("bfcl_eval")

REAL = (
    Path(__file__).resolve().parents[1] / "data" / "real" / "bfcl-v3-2024"
    / "gpt-4o-2024-08-06-FC" / "BFCL_v3_multi_turn_base_result.json"
)  # fmt: skip
NAME = "gpt-4o-2024-08-06-FC/BFCL_v3_multi_turn_base_result.json"


def real_record(rid: str) -> dict[str, Any]:
    for line in REAL.read_bytes().splitlines():
        record = orjson.loads(line)
        if record["id"] == rid:
            return record
    raise KeyError(rid)


def imported(record: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    events, report = run("bfcl", orjson.dumps(record) + b"\n", name=NAME)
    assert report.errors == []
    [evs] = traces_of(events).values()
    for ev in evs:
        assert validate_event(orjson.loads(orjson.dumps(ev))) == [], ev
    return evs, report


def carrying(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in evs[1:] if "duration_ms" in e or "usage" in e]


def test_each_model_call_s_figures_are_on_its_step():
    record = real_record("multi_turn_base_4")
    evs, report = imported(record)
    head, steps = evs[0], carrying(evs)
    # 5 + 4 + 2 model calls: four calls then the answer, three then the answer, one then it
    assert [(e["turn"], e["type"], e.get("name") or e["role"]) for e in steps] == [
        (0, "tool_call", "ls"), (0, "tool_call", "mv"), (0, "tool_call", "mkdir"),
        (0, "tool_call", "mv"), (0, "message", "assistant"),
        (1, "tool_call", "sort"), (1, "tool_call", "cd"), (1, "tool_call", "sort"),
        (1, "message", "assistant"),
        (2, "tool_call", "post_tweet"), (2, "message", "assistant"),
    ]  # fmt: skip
    assert [e["meta"]["step"] for e in steps] == [0, 1, 2, 3, 4, 0, 1, 2, 3, 0, 1]
    assert steps[0]["duration_ms"] == pytest.approx(1312.840223312378)
    assert steps[0]["usage"] == {"input_tokens": 1989, "output_tokens": 14}
    assert steps[-1]["duration_ms"] == pytest.approx(678.6458492279053)
    assert steps[-1]["usage"] == {"input_tokens": 2478, "output_tokens": 24}
    flat = [v for turn in record["latency"] for v in turn]
    assert [e["duration_ms"] for e in steps] == pytest.approx([v * 1000 for v in flat])
    assert [e["usage"]["output_tokens"] for e in steps] == [
        v for turn in record["output_token_count"] for v in turn
    ]
    # the header states none of it (its figures would win over the steps'), keeps the lists
    assert "duration_ms" not in head and "usage" not in head
    assert head["meta"]["latency"] == record["latency"]
    assert "step_figures_unmatched" not in head["meta"] and report.notes == []
    # counted once: the trace's totals are the lists' sums
    totals = totals_of(evs)
    assert totals["duration_ms"] == pytest.approx(sum(flat) * 1000)
    assert (totals["input_tokens"], totals["output_tokens"]) == (24087, 232)
    assert totals["total_tokens"] == 24087 + 232


def test_a_text_only_run_s_answers_carry_their_calls():
    evs, _ = imported(real_record("multi_turn_base_3"))
    steps = carrying(evs)
    assert [(e["turn"], e["role"]) for e in steps] == [(0, "assistant"), (1, "assistant")]
    assert [e["usage"] for e in steps] == [
        {"input_tokens": 1330, "output_tokens": 28},
        {"input_tokens": 1396, "output_tokens": 53},
    ]
    latency = (1.4806079864501953 + 1.4908442497253418) * 1000
    assert totals_of(evs)["duration_ms"] == pytest.approx(latency)


def test_latency_of_another_shape_stays_on_the_header_with_the_reason():
    record = copy.deepcopy(real_record("multi_turn_base_4"))
    record["latency"][1] = record["latency"][1][:3]  # turn 1: 3 values for its 4 steps
    evs, report = imported(record)
    head = evs[0]
    why = "turn 1 has 3 values for its 4 steps"
    assert head["meta"]["step_figures_unmatched"] == {"latency": why}
    assert all("duration_ms" not in e for e in evs[1:])
    flat = [v for turn in record["latency"] for v in turn]
    assert head["duration_ms"] == pytest.approx(sum(flat) * 1000)  # the sum of what is recorded
    # the token counts have the steps' shape: on the steps, not on the header
    assert "usage" not in head and len([e for e in evs if "usage" in e]) == 11
    key = "BFCL per-step latency of another shape than the steps (sum kept on the header)"
    assert report.unmapped == {key: 1}
    assert report.examples[key] == [f"bfcl:multi_turn_base_4: {why}"]
    assert report.notes == [NOTE] and report.errors == []
    totals = totals_of(evs)
    assert totals["duration_ms"] == pytest.approx(sum(flat) * 1000)
    assert totals["input_tokens"] == 24087


def test_token_counts_go_on_the_steps_together_or_not_at_all():
    """Output counts with a turn too many: input and output both stay on the header, so the
    trace's tokens come from one place; the latency still goes on the steps."""
    record = copy.deepcopy(real_record("multi_turn_base_4"))
    record["output_token_count"].append([7])
    evs, report = imported(record)
    head = evs[0]
    assert head["meta"]["step_figures_unmatched"] == {
        "output_token_count": "4 turns of values for the result's 3 turns"
    }
    assert head["usage"] == {"input_tokens": 24087, "output_tokens": 232 + 7}
    assert all("usage" not in e for e in evs[1:])
    assert len([e for e in evs[1:] if "duration_ms" in e]) == 11 and "duration_ms" not in head
    key = "BFCL per-step token counts of another shape than the steps (sum kept on the header)"
    assert report.unmapped == {key: 1}
    totals = totals_of(evs)
    assert (totals["input_tokens"], totals["output_tokens"]) == (24087, 239)


@pytest.mark.parametrize(
    ("latency", "why"),
    [
        (8.8, "not a list of turns but 8.8"),
        ([1.3, 0.7, 1.0], "turn 0 is 1.3, not a list of per-step values"),
        ([[1.3, 0.7, 1.0, 0.6, -0.5], [0.7] * 4, [1.0] * 2], "turn 0 step 4 is -0.5"),
    ],
)
def test_latency_that_is_no_per_step_list_is_kept_and_said(latency, why):
    record = {**real_record("multi_turn_base_4"), "latency": latency}
    evs, report = imported(record)
    assert why in evs[0]["meta"]["step_figures_unmatched"]["latency"]
    assert all("duration_ms" not in e for e in evs[1:])
    assert evs[0]["meta"]["latency"] == latency and report.notes == [NOTE]


def test_an_empty_model_response_is_a_step_with_its_figures():
    """bfcl-eval records a model call that answered nothing as an empty step ("Empty response
    from the model. Proceed to next turn."): it took time and tokens, so it is an event."""
    record = copy.deepcopy(real_record("multi_turn_base_4"))
    record["result"][2] = [[{"post_tweet": record["result"][2][0][0]["post_tweet"]}], []]
    evs, report = imported(record)
    empty = [e for e in evs if e.get("meta", {}).get("empty_response")]
    assert len(empty) == 1 and report.flags["empty_model_response"] == 1
    [e] = empty
    assert (e["type"], e["role"], e["content"], e["turn"]) == ("message", "assistant", "", 2)
    assert e["usage"] == {"input_tokens": 2478, "output_tokens": 24}
    assert e["duration_ms"] == pytest.approx(678.6458492279053)
    assert "step_figures_unmatched" not in evs[0]["meta"]
