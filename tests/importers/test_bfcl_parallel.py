"""A BFCL step with several calls: each result follows its own call, and TwinCheck's repeat
certificate reads the state the retried call met (the real case: a failed `wc`, then one step
`cd` + the identical `wc`, which succeeds because the `cd` ran first)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from policies.certificates import CertContext, repeat_after_error
from policies.facts import TraceFacts
from policies.tool_profile import build_profile
from policies.trace import ToolCall, Trace
from traces.importers.bfcl import load_tasks

from ._helpers import check_invariants, run

pytest.importorskip("bfcl_eval")

WC = '{"file_name": "final_report.pdf", "mode": "l"}'
WC_ERROR = '{"error": "wc: final_report.pdf: No such file or directory"}'


def record(with_cd: bool) -> dict[str, Any]:
    """multi_turn_base_0's first turn as a model wrote it: step 0 a failing `wc` in the
    workspace root; step 1 (`cd` and) the identical `wc`; step 2 a text answer."""
    step1 = [{"cd": '{"folder": "document"}'}, {"wc": WC}] if with_cd else [{"wc": WC}]
    outputs = (
        ['{"current_working_directory": "document"}', '{"count": 1, "type": "lines"}']
        if with_cd
        else [WC_ERROR]
    )
    query = load_tasks()["multi_turn_base_0"]["question"][0]  # the installed task's turn
    return {
        "id": "multi_turn_base_0",
        "result": [[[{"wc": WC}], step1, "It has 1 line."]],
        "inference_log": [
            {
                "begin_of_turn_query": query,
                "step_0": [
                    {"role": "assistant", "content": "…"},
                    {"role": "tool", "content": WC_ERROR},
                ],
                "step_1": [{"role": "assistant", "content": "…"}]
                + [{"role": "tool", "content": o} for o in outputs],
                "step_2": [{"role": "assistant", "content": "It has 1 line."}],
            }
        ],
    }


def imported(with_cd: bool) -> tuple[list[dict[str, Any]], Any]:
    events, report = run(
        "bfcl",
        orjson.dumps(record(with_cd)) + b"\n",
        name="BFCL_v4_multi_turn_base_result.json",
    )
    assert report.errors == []
    check_invariants(events)
    return [se.event for se in events], report


def repeat_at(events: list[dict[str, Any]], call_id: str) -> Any:
    trace = Trace.from_events(events)
    call = next(e for e in trace.events if isinstance(e, ToolCall) and e.call_id == call_id)
    facts = TraceFacts()
    for e in trace.events[: call.index]:
        facts.observe(e)
    return repeat_after_error(call, CertContext(trace, facts, build_profile(trace)))


def test_each_result_follows_its_own_call_in_a_parallel_step() -> None:
    evs, report = imported(with_cd=True)
    step = [(e["type"], e.get("call_id")) for e in evs if e.get("call_id", "").startswith("t0.s1")]
    assert step == [
        ("tool_call", "t0.s1.c0"),
        ("tool_result", "t0.s1.c0"),
        ("tool_call", "t0.s1.c1"),
        ("tool_result", "t0.s1.c1"),
    ]
    first = next(e for e in evs if e.get("call_id") == "t0.s1.c0" and e["type"] == "tool_call")
    assert first["meta"]["parallel_calls"] == 2 and report.flags["parallel_step"] == 1


def test_no_repeat_certificate_on_a_retry_that_met_a_changed_state() -> None:
    evs, _ = imported(with_cd=True)
    assert repeat_at(evs, "t0.s1.c1") is None


def test_the_identical_retry_without_a_state_change_is_still_certified() -> None:
    evs, report = imported(with_cd=False)
    hit = repeat_at(evs, "t0.s1.c0")
    assert hit is not None and hit.certificate == "repeat_after_error"
    assert "parallel_step" not in report.flags


def test_calls_first_order_leaves_the_precondition_unreadable() -> None:
    # The same step written calls first (as other importers may): the `cd` has no result yet
    # at the retried `wc`, so whether the state changed is unknown and nothing is certified.
    evs, _ = imported(with_cd=True)
    head = [e for e in evs if not e.get("call_id", "").startswith("t0.s1")]
    step = [e for e in evs if e.get("call_id", "").startswith("t0.s1")]
    cut = head.index(next(e for e in head if e["type"] == "message" and e["role"] == "assistant"))
    calls = [e for e in step if e["type"] == "tool_call"]
    results = [e for e in step if e["type"] == "tool_result"]
    reordered = head[:cut] + calls + results + head[cut:]
    for i, e in enumerate(reordered):
        e["seq"] = i
    assert repeat_at(reordered, "t0.s1.c1") is None


def test_the_audit_keeps_the_successful_retry_and_knows_its_outcome() -> None:
    from policies import Auditor
    from policies.environments.bfcl import BFCLEnvironment

    evs, _ = imported(with_cd=True)
    result = Auditor(("twincheck",), environment=BFCLEnvironment()).audit(evs)["twincheck"]
    assert result.record["triggers"] == 0 and not result.record["accepted"]
    assert result.actor_success is not None and result.transition == "same"
