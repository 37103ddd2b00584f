from __future__ import annotations

from typing import Any

import pytest

from policies.audit import audit_trace
from policies.certificates import (
    inverse_action,
    inverse_name,
    repeat_after_error,
    unique_stale_argument,
)
from policies.environment import ToyEnvironment
from policies.facts import TraceFacts
from policies.judges import (
    HeuristicJudge,
    HumanJudge,
    PairRequest,
    Proposal,
    RecordedJudge,
    Verdict,
)
from policies.schema import validate
from policies.trace import ToolCall, Trace
from policies.twincheck import (
    Twin,
    TwinCheckSettings,
    structural_checks,
    switch_gate,
)

from ._build import Events, account_tools, lock_unlock_trace

S = TwinCheckSettings()


def facts_at(trace: Trace, index: int) -> TraceFacts:
    f = TraceFacts()
    for e in trace.events[:index]:
        f.observe(e)
    return f


def last_call(trace: Trace) -> ToolCall:
    call = [e for e in trace.events if isinstance(e, ToolCall)][-1]
    return call


# --- schema ---------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "required": ["id", "mode"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string"},
        "mode": {"enum": ["a", "b"]},
        "n": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "ratio": {"type": "float"},
    },
}


@pytest.mark.parametrize(
    "value,errors",
    [
        ({"id": "x", "mode": "a"}, []),
        ({"id": "x", "mode": "a", "n": 2.0, "tags": ["t"], "ratio": 1}, []),
        ({"mode": "a"}, ["$: missing required property 'id'"]),
        ({"id": 3, "mode": "c"}, ["$.id: expected string, got int", "$.mode: 'c' is not one of"]),
        ({"id": "x", "mode": "a", "n": True}, ["$.n: expected integer, got bool"]),
        ({"id": "x", "mode": "a", "tags": ["ok", 1]}, ["$.tags[1]: expected string, got int"]),
        ({"id": "x", "mode": "a", "zzz": 1}, ["$: unexpected property 'zzz'"]),
        ("nope", ["$: expected object, got str"]),
    ],
)
def test_schema_subset_validator(value: Any, errors: list[str]) -> None:
    got = validate(value, SCHEMA)
    assert len(got) == len(errors)
    for g, e in zip(got, errors, strict=True):
        assert g.startswith(e)


# --- certificates ---------------------------------------------------------------------


def test_inverse_names() -> None:
    assert inverse_name("unlock_account") == "lock_account"
    assert inverse_name("lock_account") == "unlock_account"
    assert inverse_name("removeItem") == "addItem"
    assert inverse_name("get_account") is None


def test_inverse_action_fires_with_completion_twin() -> None:
    t = Trace.from_events(lock_unlock_trace())
    call = last_call(t)
    hit = inverse_action(call, facts_at(t, call.index), t)
    assert hit is not None and hit.twin.kind == "completion"
    assert hit.details["inverts"] == 2


@pytest.mark.parametrize("text", ["Please unlock account acc_1", "Oops, undo that please"])
def test_inverse_action_respects_requested_reversal(text: str) -> None:
    t = Trace.from_events(lock_unlock_trace(user_text=text))
    call = last_call(t)
    assert inverse_action(call, facts_at(t, call.index), t) is None


def test_inverse_action_needs_same_target_and_prior_success() -> None:
    b = Events("x", tools=account_tools())
    b.user("lock acc_1 and tell me about acc_2")
    b.call("c1", "lock_account", key="acc_1")
    b.result("c1", content="ok")
    b.call("c2", "unlock_account", key="acc_2")
    t = Trace.from_events(b.events)
    assert inverse_action(last_call(t), facts_at(t, 4), t) is None
    b2 = Events("y", tools=account_tools())
    b2.user("lock acc_1")
    b2.call("c1", "lock_account", key="acc_1")
    b2.result("c1", status="error", content="denied")
    b2.call("c2", "unlock_account", key="acc_1")
    t2 = Trace.from_events(b2.events)
    assert inverse_action(last_call(t2), facts_at(t2, 4), t2) is None


def test_inverse_action_with_unresolved_failure_twin_is_deletion() -> None:
    b = Events("z", tools=account_tools())
    b.user("lock acc_1 and set payment for acc_9")
    b.call("c1", "lock_account", key="acc_1")
    b.result("c1", content="ok")
    b.call("c2", "set_payment", key="acc_9", value="card")
    b.result("c2", status="error", content="acc_9 unknown")
    b.call("c3", "unlock_account", key="acc_1")
    t = Trace.from_events(b.events)
    hit = inverse_action(last_call(t), facts_at(t, 6), t)
    assert hit is not None and hit.twin.kind == "delete"


def repeat_trace(intervening_success: bool = False, read_only: bool = True) -> Trace:
    tools = account_tools() if read_only else account_tools()[:2]
    b = Events("r", tools=tools)
    b.user("Change the payment of acc_7 to card_1")
    b.call("c1", "set_payment", key="acc_7", value="card_1")
    b.result("c1", status="error", content="payment method not found")
    if intervening_success:
        b.call("c2", "get_account", key="acc_7")
        b.result("c2", content={"key": "acc_7", "payment": "card_0"})
    b.call("c3", "set_payment", key="acc_7", value="card_1")
    return Trace.from_events(b.events)


def test_repeat_after_error_proposes_grounded_read_only_call() -> None:
    t = repeat_trace()
    call = last_call(t)
    hit = repeat_after_error(call, facts_at(t, call.index), t)
    assert hit is not None
    assert hit.twin == Twin("call", "get_account", {"key": "acc_7"})
    checks = structural_checks(hit.twin, call, facts_at(t, call.index), t)
    assert checks["passed"] and checks["tool_exists"] and checks["schema_valid"]


def test_repeat_after_error_needs_no_intervening_success_and_a_read_only_tool() -> None:
    t = repeat_trace(intervening_success=True)
    assert repeat_after_error(last_call(t), facts_at(t, last_call(t).index), t) is None
    t2 = repeat_trace(read_only=False)
    assert repeat_after_error(last_call(t2), facts_at(t2, last_call(t2).index), t2) is None


def stale_trace(user: str) -> Trace:
    b = Events("s", tools=account_tools())
    b.user("What cards do I have?")
    b.call("c1", "get_account", key="acc_7")
    b.result("c1", content={"key": "acc_7", "cards": ["card_4332", "card_8107", "card_5550"]})
    b.user(user)
    b.call("c2", "set_payment", key="acc_7", value="card_4332")
    return Trace.from_events(b.events)


def test_unique_stale_argument_replaces_only_that_argument() -> None:
    t = stale_trace("Use the card ending in 8107 please")
    call = last_call(t)
    hit = unique_stale_argument(call, facts_at(t, call.index), t)
    assert hit is not None
    assert hit.twin.arguments == {"key": "acc_7", "value": "card_8107"}
    assert hit.details == {"argument": "value", "stale": "card_4332", "requested": "card_8107"}


@pytest.mark.parametrize(
    "user",
    [
        "Use card 8107 or 5550",
        "use the card ending in 4332",
        "pay with my usual card",
        "use card 9999",
    ],
)
def test_unique_stale_argument_needs_a_unique_concrete_different_request(user: str) -> None:
    t = stale_trace(user)
    assert unique_stale_argument(last_call(t), facts_at(t, last_call(t).index), t) is None


# --- structural checks ----------------------------------------------------------------


def test_structural_checks_fail_cases() -> None:
    t = repeat_trace()
    call = last_call(t)
    f = facts_at(t, call.index)
    assert (
        structural_checks(Twin("call", "nope", {"key": "acc_7"}), call, f, t)["tool_exists"]
        is False
    )
    bad = structural_checks(Twin("call", "get_account", {"key": 7}), call, f, t)
    assert bad["schema_valid"] is False and not bad["passed"]
    ung = structural_checks(Twin("call", "get_account", {"key": "acc_999"}), call, f, t)
    assert ung["ungrounded"] == ["key"] and not ung["passed"]
    same = structural_checks(Twin("call", call.name, dict(call.arguments)), call, f, t)
    assert same["differs"] is False and not same["passed"]
    # no tool inventory: existence and schema are skipped, not failed
    bare = Trace.from_events([e.raw for e in t.events[1:]])
    skipped = structural_checks(Twin("call", "get_account", {"key": "acc_7"}), call, f, bare)
    assert skipped["tool_exists"] is None and skipped["passed"]


# --- gate -----------------------------------------------------------------------------


def verdict(
    prefer: str | None,
    fatal_a: bool,
    fatal_b: bool,
    sa: float,
    sb: float,
    conf: float,
    error: str | None = None,
) -> Verdict:
    return Verdict(prefer, fatal_a, fatal_b, sa, sb, conf, "test", error)


GOOD_AF = verdict("B", True, False, 0, 4, 0.9)  # actor first: A = actor, B = twin
GOOD_TF = verdict("A", False, True, 4, 0, 0.9)  # twin first: A = twin, B = actor


def test_gate_accepts_only_when_both_orders_agree() -> None:
    assert switch_gate(GOOD_AF, GOOD_TF, S).replace
    # a position-biased judge that always prefers "A" disagrees across orders
    biased = verdict("A", False, True, 4, 0, 0.9)
    assert not switch_gate(biased, GOOD_TF, S).replace


@pytest.mark.parametrize(
    "af,reason",
    [
        (verdict("B", False, False, 0, 4, 0.9), "not marked fatal"),
        (verdict("B", True, True, 0, 4, 0.9), "twin marked fatal"),
        (verdict("B", True, False, 0, 4, 0.69), "confidence"),
        (verdict("B", True, False, 2, 3.9, 0.9), "margin"),
        (verdict(None, True, False, 0, 4, 0.9), "does not prefer"),
        (verdict(None, False, False, 0, 0, 0, "timeout"), "judge error"),
    ],
)
def test_gate_rejections(af: Verdict, reason: str) -> None:
    g = switch_gate(af, GOOD_TF, S)
    assert not g.replace and reason in g.reason


def test_gate_thresholds_are_inclusive() -> None:
    edge_af = verdict("B", True, False, 1, 3, 0.7)
    edge_tf = verdict("A", False, True, 3, 1, 0.7)
    assert switch_gate(edge_af, edge_tf, S).replace
    strict = TwinCheckSettings(min_confidence=0.71)
    assert not switch_gate(edge_af, edge_tf, strict).replace


# --- judges ---------------------------------------------------------------------------


def test_heuristic_judge_is_order_invariant_and_prefers_the_twin_on_a_repeat() -> None:
    t = repeat_trace()
    call = last_call(t)
    f = facts_at(t, call.index)
    actor = Proposal("call", call.name, dict(call.arguments))
    twin = Proposal("call", "get_account", {"key": "acc_7"})
    j = HeuristicJudge()
    v1 = j.judge(PairRequest("p", "actor_first", actor, twin, "", t, f))
    v2 = j.judge(PairRequest("p", "twin_first", twin, actor, "", t, f))
    assert (v1.prefer, v2.prefer) == ("B", "A")
    assert (v1.fatal_a, v1.fatal_b) == (True, False) == (v2.fatal_b, v2.fatal_a)
    assert switch_gate(v1, v2, S).replace


def test_recorded_and_human_judges() -> None:
    events = [e.raw for e in repeat_trace().events]
    events.append(
        {
            "trace_id": "r",
            "type": "judgment",
            "pair": "r:c3",
            "orientation": "AB",
            "prefer": "B",
            "fatal": {"A": True, "B": False},
            "scores": {"A": 0, "B": 4},
            "confidence": 0.95,
            "judge": "gpt",
        }
    )
    t = Trace.from_events(events)
    a, b = Proposal("call", "x"), Proposal("call", "y")
    rec = RecordedJudge()
    got = rec.judge(PairRequest("r:c3", "actor_first", a, b, "", t))
    assert got.prefer == "B" and got.fatal_a and got.judge == "gpt" and got.error is None
    missing = rec.judge(PairRequest("r:c3", "twin_first", b, a, "", t))
    assert missing.error is not None
    human = HumanJudge(
        {
            ("r:c3", "twin_first"): {
                "prefer": "A",
                "fatal": ["B"],
                "scores": {"A": 4, "B": 1},
                "confidence": 1,
            },
            "r:c3|AB": {
                "prefer": "B",
                "fatal": ["A"],
                "scores": {"A": 0, "B": 4},
                "confidence": 0.8,
            },
        }
    )
    v_tf = human.judge(PairRequest("r:c3", "twin_first", b, a, ""))
    v_af = human.judge(PairRequest("r:c3", "actor_first", a, b, ""))
    assert v_tf.prefer == "A" and v_tf.fatal_b and v_tf.judge == "human"
    assert switch_gate(v_af, v_tf, S).replace
    assert human.judge(PairRequest("other", "actor_first", a, b, "")).error


# --- the policy through audit_trace -----------------------------------------------------


def test_twincheck_truncated_without_environment() -> None:
    res = audit_trace(lock_unlock_trace(), policies=("twincheck",))["twincheck"]
    assert res.applied and res.continuation == "truncated"
    assert res.guarded_success is None and res.transition == "unknown"
    rec = res.record["decisions"][0]
    assert rec["certificate"]["name"] == "inverse_action"
    assert [j["orientation"] for j in rec["judgments"]] == ["actor_first", "twin_first"]
    assert rec["gate"]["replace"] and rec["settings"]["min_margin"] == 2.0


def test_twincheck_spliced_in_toy_environment_rescues() -> None:
    env = ToyEnvironment()
    res = audit_trace(lock_unlock_trace(success=False), policies=("twincheck",), environment=env)[
        "twincheck"
    ]
    assert res.continuation == "spliced"
    assert (res.actor_success, res.guarded_success, res.transition) == (False, True, "rescue")
    assert env.calls == [("lock_account", {"key": "acc_1"})]  # the unlock was never executed
    assert res.guarded_trajectory is not None
    assert res.guarded_trajectory[-1]["meta"]["certificate"] == "inverse_action"


def test_twincheck_with_recorded_judge_missing_judgments_keeps_actor() -> None:
    res = audit_trace(lock_unlock_trace(), policies=("twincheck",), judge="recorded")
    r = res["twincheck"]
    assert r.continuation == "exact" and r.record["triggers"] == 1 and r.record["accepted"] == 0
    assert "judge error" in r.record["decisions"][0]["gate"]["reason"]


def test_twincheck_no_tools_and_empty_trace() -> None:
    for events in ([], [{"trace_id": "e", "type": "message", "role": "user", "content": "hi"}]):
        r = audit_trace(events, policies=("twincheck",))["twincheck"]
        assert not r.applied and r.record["tool_calls"] == 0 and r.continuation == "exact"


def test_human_judge_rejects_malformed_keys() -> None:
    with pytest.raises(ValueError):
        HumanJudge({"no-orientation-here": {"prefer": "A"}})


@pytest.mark.parametrize(
    "trace,certificate,twin_args",
    [
        (
            stale_trace("Use the card ending in 8107 please"),
            "unique_stale_argument",
            {"key": "acc_7", "value": "card_8107"},
        ),
        (repeat_trace(), "repeat_after_error", {"key": "acc_7"}),
    ],
)
def test_certificates_end_to_end_with_the_heuristic_judge(
    trace: Trace, certificate: str, twin_args: dict[str, Any]
) -> None:
    res = audit_trace(trace.raw_events(), policies=("twincheck",))["twincheck"]
    rec = res.record["decisions"][0]
    assert rec["certificate"]["name"] == certificate and rec["twin"]["arguments"] == twin_args
    assert rec["gate"]["replace"] and res.continuation == "truncated"
    assert res.guarded_trajectory is not None
    twin_event = res.guarded_trajectory[-1]
    assert twin_event["type"] == "tool_call" and twin_event["arguments"] == twin_args
    assert res.record["gate_score"] > 0.5


@pytest.mark.parametrize(
    "value,kind",
    [
        ("card_4332", ("card_", "4332")),
        ("gift_card_8516878", ("gift_card_", "8516878")),
        ("4BMN53", None),
        ("2", None),
        ("acc_7", None),
        ("HAT097", ("HAT", "097")),
    ],
)
def test_identifier_kind(value: str, kind: tuple[str, str] | None) -> None:
    from policies.certificates import identifier_kind

    assert identifier_kind(value) == kind


def test_stale_argument_ignores_plain_numbers_and_codes() -> None:
    # τ-bench false positives seen on real data: counts and reservation codes are not
    # "values of the same kind" the user can ask for by their digits
    b = Events("n", tools=account_tools())
    b.user("book it")
    b.call("c1", "get_account", key="acc_7")
    b.result("c1", content={"key": "acc_7", "bags": 0, "code": "4BMN53", "other": 2})
    b.user("I want 2 bags on reservation 4BMN53")
    b.call("c2", "set_payment", key="4BMN53", value="0")
    t = Trace.from_events(b.events)
    assert unique_stale_argument(last_call(t), facts_at(t, 4), t) is None


def test_read_only_twin_without_declared_read_only_tools() -> None:
    # no tool declares read_only: read verbs in the name stand in
    tools = [{k: v for k, v in t.items() if k != "read_only"} for t in account_tools()]
    b = Events("ro", tools=tools)
    b.user("Change the payment of acc_7 to card_1")
    b.call("c1", "set_payment", key="acc_7", value="card_1")
    b.result("c1", status="error", content="payment method not found")
    b.call("c3", "set_payment", key="acc_7", value="card_1")
    t = Trace.from_events(b.events)
    hit = repeat_after_error(last_call(t), facts_at(t, 4), t)
    assert hit is not None and hit.twin == Twin("call", "get_account", {"key": "acc_7"})


def test_read_only_twin_from_observed_calls_when_the_header_lists_no_tools() -> None:
    b = Events("obs")  # τ-bench-style: no tool inventory in the header
    b.user("Change flights on reservation XEWRD9")
    b.call("c0", "get_reservation_details", reservation_id="XEWRD9")
    b.result("c0", content={"reservation_id": "XEWRD9", "cabin": "economy"})
    b.call("c1", "update_reservation_flights", reservation_id="XEWRD9", cabin="economy")
    b.result("c1", status="error", content="Error: not enough seats")
    b.call("c2", "update_reservation_flights", reservation_id="XEWRD9", cabin="economy")
    t = Trace.from_events(b.events)
    res = audit_trace(t.raw_events(), policies=("twincheck",))["twincheck"]
    rec = res.record["decisions"][0]
    assert rec["certificate"]["name"] == "repeat_after_error"
    assert rec["twin"] == {
        "kind": "call",
        "name": "get_reservation_details",
        "arguments": {"reservation_id": "XEWRD9"},
        "text": "",
    }
    assert rec["checks"]["tool_exists"] is None and rec["gate"]["replace"]
