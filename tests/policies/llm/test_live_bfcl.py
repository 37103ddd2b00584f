"""Live continuation on BFCL: after TwinCheck's first accepted replacement the scripted actor
continues the task through the real bfcl-eval classes, and BFCL's checker decides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("bfcl_eval")

from policies.environments.bfcl import BFCLEnvironment  # noqa: E402
from policies.llm import Budget, FileCache  # noqa: E402
from policies.llm.judge import LLMJudge  # noqa: E402
from policies.llm.live_bfcl import continue_live  # noqa: E402
from policies.trace import Trace  # noqa: E402
from policies.transitions import transition  # noqa: E402
from policies.twincheck.policy import TwinCheckPolicy  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402

from .bfcl_traces import actor_success, build, task  # noqa: E402
from .conftest import client  # noqa: E402
from .scripts import bfcl_actor, route, verifier_against  # noqa: E402

TASK = "multi_turn_base_0"
CD_DOC = ("cd", {"folder": "document"})
CD_TEMP = ("cd", {"folder": "temp"})
T0 = [
    CD_DOC,
    ("mkdir", {"dir_name": "temp"}),
    ("mv", {"source": "final_report.pdf", "destination": "temp"}),
]
T1 = [CD_TEMP, ("grep", {"file_name": "final_report.pdf", "pattern": "budget analysis"})]
T2 = [("sort", {"file_name": "final_report.pdf"})]
T3 = [
    ("cd", {"folder": ".."}),
    ("mv", {"source": "previous_report.pdf", "destination": "temp"}),
    CD_TEMP,
    ("diff", {"file_name1": "final_report.pdf", "file_name2": "previous_report.pdf"}),
]
SOLUTION = [T0, T1, T2, T3]
LATER = [[[c] for c in turn] + ["Done."] for turn in (T1, T2, T3)]


def failing_actor() -> list[dict[str, Any]]:
    """Retries a failed cd, gives up on turn 0, then does turns 1-3 right: fails BFCL."""
    turn0 = [[CD_DOC], [CD_TEMP], [CD_TEMP], "I could not find the temp directory."]
    return build(TASK, [turn0, *LATER])


def succeeding_actor() -> list[dict[str, Any]]:
    """Retries a failed cd, then recovers: passes BFCL."""
    turn0 = [[CD_DOC], [CD_TEMP], [CD_TEMP], [T0[1]], [T0[2]], "Done."]
    return build(TASK, [turn0, *LATER])


def guard(server: FakeOpenAI, events: list[dict[str, Any]], script: list[list[Any]], **kw: Any):
    """TwinCheck with the LLM judge, then live continuation of its first accepted replacement."""
    server.responder = route(verifier_against("call cd("), bfcl_actor(script))
    c = client(server, **kw)
    trace = Trace.from_events(events)
    decision = next(d for d in TwinCheckPolicy(judge=LLMJudge(c)).decisions(trace) if d.replace)
    assert decision.record["certificate"]["name"] == "repeat_after_error"
    prefix = [e.raw for e in trace.events[: decision.index]]
    return decision, continue_live(trace, prefix, decision.replacement, BFCLEnvironment(), c)


def test_ground_truth_script_passes_bfcl() -> None:
    events = build(TASK, [[[c] for c in turn] + ["Done."] for turn in SOLUTION])
    assert actor_success(events) is True
    assert [len(t) for t in task(TASK)["ground_truth"]] == [len(t) for t in SOLUTION]


def test_a_continuation_that_passes_bfcl_turns_a_failure_into_a_rescue(server: FakeOpenAI) -> None:
    events = failing_actor()
    assert actor_success(events) is False
    decision, (traj, success, calls) = guard(server, events, SOLUTION)
    assert success is True
    assert transition(False, success) == "rescue"
    check = calls[-1]
    assert check["purpose"] == "bfcl_check" and check["valid"] is True
    live = [c for c in calls if c["purpose"] == "live"]
    assert live and all(c["error"] is None and len(c["cache_key"]) == 64 for c in live)
    # the replacement was executed in place of the repeated call, the rest is the actor's
    twin = decision.replacement[0]
    results = {e["call_id"]: e for e in traj if e["type"] == "tool_result"}
    assert results[twin["call_id"]]["meta"]["live"] is True
    live_calls = [
        (e["name"], e["arguments"])
        for e in traj
        if e.get("meta", {}).get("live") and e["type"] == "tool_call"
    ]
    assert live_calls == [*T0[1:], *T1, *T2, *T3]
    # the prefix is exact replay: the recorded events, unchanged
    assert traj[: decision.index] == events[: decision.index]


def test_later_user_turns_are_held_out_until_each_turn_ends(server: FakeOpenAI) -> None:
    guard(server, failing_actor(), SOLUTION)
    questions = [q[0]["content"] for q in task(TASK)["question"]]
    live = [b for b in server.bodies() if b.get("tools")]
    assert live
    for body in live:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        assert users == questions[: len(users)]
        last = body["messages"][-1]
        # a request is made at the start of a turn or after tool results, never after a text
        # answer of the same turn
        assert last["role"] in ("user", "tool")
    assert any(len([m for m in b["messages"] if m["role"] == "user"]) == 4 for b in live)
    names = {t["function"]["name"] for t in live[0]["tools"]}
    assert {"cd", "mkdir", "mv", "post_tweet"} <= names  # the package's docs of both classes
    assert "tool_choice" not in live[0] and live[0]["temperature"] == 0


def test_a_continuation_that_fails_bfcl_is_no_rescue(server: FakeOpenAI) -> None:
    wrong = [
        [
            CD_DOC,
            ("mkdir", {"dir_name": "temp"}),
            ("mv", {"source": "final_report.pdf", "destination": "archive"}),
        ],
        T1,
        T2,
        T3,
    ]
    _, (_, success, calls) = guard(server, failing_actor(), wrong)
    assert success is False
    assert transition(False, success) == "same"
    assert calls[-1]["error_type"] is not None


def test_a_continuation_that_fails_bfcl_turns_a_success_into_a_harm(server: FakeOpenAI) -> None:
    events = succeeding_actor()
    assert actor_success(events) is True
    gives_up = [[CD_DOC], T1, T2, T3]  # ends turn 0 with text instead of mkdir + mv
    _, (_, success, _) = guard(server, events, gives_up)
    assert success is False
    assert transition(True, success) == "harm"


def test_a_continuation_that_still_passes_keeps_a_success(server: FakeOpenAI) -> None:
    _, (_, success, _) = guard(server, succeeding_actor(), SOLUTION)
    assert success is True


def test_step_limit_force_terminates_the_task(server: FakeOpenAI) -> None:
    looping = [[CD_DOC] + [("ls", {"a": i % 2 == 0}) for i in range(40)], T1, T2, T3]
    _, (traj, success, calls) = guard(server, failing_actor(), looping)
    assert success is False
    assert calls[-1]["force_terminated"] is True
    assert calls[-1]["error_type"] == "multi_turn:force_terminated"
    # turn 0: cd, cd (failed), the twin, then live steps until the package's limit (20) is
    # passed: 21 executed steps in the turn
    steps = {
        (e["turn"], e.get("meta", {}).get("step", e["call_id"]))
        for e in traj
        if e["type"] == "tool_call" and e["turn"] == 0
    }
    assert len(steps) == 21
    assert max(e["turn"] for e in traj if "turn" in e) == 0


def test_malformed_tool_call_json_ends_the_turn_as_in_the_package(server: FakeOpenAI) -> None:
    from tests.fakes.openai_server import Reply

    events = failing_actor()
    actor = bfcl_actor(SOLUTION)
    state = {"n": 0}

    def broken_first(body: dict[str, Any]) -> Reply:
        state["n"] += 1
        if state["n"] == 1:
            return Reply.tool_calls([("mkdir", '{"dir_name": "temp"')])
        return actor(body)

    server.responder = route(verifier_against("call cd("), broken_first)
    c = client(server)
    trace = Trace.from_events(events)
    d = next(d for d in TwinCheckPolicy(judge=LLMJudge(c)).decisions(trace) if d.replace)
    traj, success, calls = continue_live(
        trace, [e.raw for e in trace.events[: d.index]], d.replacement, BFCLEnvironment(), c
    )
    bad = next(e for e in traj if e.get("meta", {}).get("arguments_error"))
    assert bad["name"] == "mkdir" and bad["turn"] == 0
    # turn 0 ended there (no mkdir, no mv): BFCL fails the task
    assert success is False and calls[-1]["turn"] == 0


def test_budget_stops_the_continuation_with_an_unknown_outcome(server: FakeOpenAI) -> None:
    budget = Budget(max_calls=4)  # two verifier calls, two actor steps
    _, (traj, success, calls) = guard(server, failing_actor(), SOLUTION, budget=budget)
    assert success is None
    assert calls[-1]["error"] == "budget reached"
    assert budget.reached and "4 of 4 model calls" in budget.state().message()


def test_failed_endpoint_mid_continuation_gives_an_unknown_outcome(server: FakeOpenAI) -> None:
    from tests.fakes.openai_server import Reply

    actor = bfcl_actor(SOLUTION)
    state = {"n": 0}

    def dies(body: dict[str, Any]) -> Reply:
        state["n"] += 1
        return actor(body) if state["n"] < 3 else Reply.error(503)

    server.responder = route(verifier_against("call cd("), dies)
    c = client(server, max_retries=1)
    trace = Trace.from_events(failing_actor())
    d = next(d for d in TwinCheckPolicy(judge=LLMJudge(c)).decisions(trace) if d.replace)
    _, success, calls = continue_live(
        trace, [e.raw for e in trace.events[: d.index]], d.replacement, BFCLEnvironment(), c
    )
    assert success is None and calls[-1]["error"].startswith("HTTP 503")


def test_not_a_bfcl_trace_is_an_unknown_outcome_with_the_reason(server: FakeOpenAI) -> None:
    trace = Trace.from_events([{"trace_id": "x", "type": "trace"}])
    traj, success, calls = continue_live(trace, [], [], BFCLEnvironment(), client(server))
    assert success is None and "BFCL trace" in calls[-1]["error"] and server.count == 0


def test_rerun_from_the_cache_makes_no_request_and_is_byte_identical(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    cache = FileCache(tmp_path / "cache")
    _, first = guard(server, failing_actor(), SOLUTION, cache=cache)
    n = server.count
    assert n > 0
    _, again = guard(server, failing_actor(), SOLUTION, cache=cache)
    _, offline = guard(
        server,
        failing_actor(),
        SOLUTION,
        cache=FileCache(tmp_path / "cache"),
        offline=True,
    )
    assert server.count == n  # zero HTTP calls
    dump = [json.dumps(x, sort_keys=True).encode() for x in (first, again, offline)]
    assert dump[0] == dump[1] == dump[2]
    assert first[1] is True
