from __future__ import annotations

from typing import Any

import pytest

from policies.audit import audit_trace
from policies.certificates import Twin
from policies.environments.base import ToyEnvironment
from policies.facts import TraceFacts
from policies.judges import (
    AWAITING_REVIEW,
    HumanJudge,
    PairRequest,
    Proposal,
    RecordedJudge,
    Verdict,
)
from policies.schema import validate
from policies.tool_profile import build_profile
from policies.trace import ToolCall, Trace
from policies.twincheck.policy import TwinCheckSettings, structural_checks, switch_gate
from tests.builders.events import Events, account_tools, lock_unlock_trace

from ._twin_traces import brake_release, stale_card

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


def repeat_trace() -> Trace:
    b = Events("r", tools=account_tools())
    b.user("Change the payment of acc_7 to card_1")
    b.call("c1", "set_payment", key="acc_7", value="card_1")
    b.result("c1", status="error", content="payment method not found")
    b.call("c3", "set_payment", key="acc_7", value="card_1")
    return Trace.from_events(b.events)


# --- structural checks ----------------------------------------------------------------


def test_structural_checks_fail_cases() -> None:
    t = repeat_trace()
    call = last_call(t)
    f = facts_at(t, call.index)
    p = build_profile(t)
    assert (
        structural_checks(Twin("call", "nope", {"key": "acc_7"}), call, f, p)["tool_exists"]
        is False
    )
    bad = structural_checks(Twin("call", "get_account", {"key": 7}), call, f, p)
    assert bad["schema_valid"] is False and not bad["passed"]
    ung = structural_checks(Twin("call", "get_account", {"key": "acc_999"}), call, f, p)
    assert ung["ungrounded"] == ["key"] and not ung["passed"]
    same = structural_checks(Twin("call", call.name, dict(call.arguments)), call, f, p)
    assert same["differs"] is False and not same["passed"]
    # no tool inventory: existence and schema are skipped, not failed
    bare = build_profile(Trace.from_events([e.raw for e in t.events[1:]]))
    skipped = structural_checks(Twin("call", "get_account", {"key": "acc_7"}), call, f, bare)
    assert skipped["tool_exists"] is None and skipped["passed"]


def test_structural_checks_ground_enumerated_values_and_availability() -> None:
    b = Events(
        "v",
        tools=[
            {
                "name": "show",
                "parameters": {
                    "type": "object",
                    "properties": {"option": {"type": "string", "enum": ["fuel", "doors"]}},
                },
                "read_only": True,
            },
            {"name": "go", "parameters": {}},
        ],
        env={"name": "x", "config": {"excluded_function": ["show"]}},
    )
    b.user("go")
    b.call("c1", "go")
    t = Trace.from_events(b.events)
    call = last_call(t)
    f = facts_at(t, call.index)
    checks = structural_checks(Twin("call", "show", {"option": "doors"}), call, f, build_profile(t))
    assert checks["grounded"] and checks["available"] is False and not checks["passed"]


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
        (Verdict.abstain("h", "no signal"), "judge abstained (actor_first): no signal"),
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
    waiting = human.judge(PairRequest("other", "actor_first", a, b, ""))
    assert waiting.abstained and waiting.reason == AWAITING_REVIEW and waiting.error is None


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


def test_human_judge_without_verdicts_lists_both_orders_as_awaiting_review() -> None:
    res = audit_trace(lock_unlock_trace(), policies=("twincheck",), judge="human")["twincheck"]
    assert res.continuation == "exact" and res.record["accepted"] == 0
    gate = res.record["decisions"][0]["gate"]
    assert gate["awaiting_review"] == ["actor_first", "twin_first"] and not gate["replace"]
    assert AWAITING_REVIEW in gate["reason"]
    assert res.record["awaiting_review"] == [
        {
            "pair": "lock:c2",
            "call_index": 4,
            "certificate": "inverse_action",
            "orientations": ["actor_first", "twin_first"],
        }
    ]
    # one verdict in: the other order still awaits review
    one = {
        ("lock:c2", "actor_first"): {
            "prefer": "B",
            "fatal": ["A"],
            "scores": {"A": 0, "B": 4},
            "confidence": 1,
        }
    }
    part = audit_trace(
        lock_unlock_trace(), ("twincheck",), judge="human", judge_options={"verdicts": one}
    )
    assert part["twincheck"].record["awaiting_review"][0]["orientations"] == ["twin_first"]
    both = {
        **one,
        ("lock:c2", "twin_first"): {
            "prefer": "A",
            "fatal": ["B"],
            "scores": {"A": 4, "B": 0},
            "confidence": 1,
        },
    }
    done = audit_trace(
        lock_unlock_trace(), ("twincheck",), judge="human", judge_options={"verdicts": both}
    )
    assert (
        done["twincheck"].record["accepted"] == 1
        and done["twincheck"].record["awaiting_review"] == []
    )
    # verdicts that do not meet the paper's gate keep the actor's call
    weak = {k: {**v, "confidence": 0.5} for k, v in both.items()}
    kept = audit_trace(
        lock_unlock_trace(), ("twincheck",), judge="human", judge_options={"verdicts": weak}
    )
    assert kept["twincheck"].record["accepted"] == 0
    assert "confidence" in kept["twincheck"].record["decisions"][0]["gate"]["reason"]


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
    "events,certificate,twin",
    [
        (
            stale_card().events,
            "unique_stale_argument",
            {
                "kind": "call",
                "name": "modify_pending_order_payment",
                "arguments": {"order_id": "#W123", "payment_method_id": "card_8107"},
                "text": "",
            },
        ),
        (
            repeat_trace().raw_events(),
            "repeat_after_error",
            {"kind": "call", "name": "get_account", "arguments": {"key": "acc_7"}, "text": ""},
        ),
        (
            brake_release().events,
            "inverse_action",
            {
                "kind": "completion",
                "name": "",
                "arguments": {},
                "text": "The requested operation is complete.",
            },
        ),
    ],
)
def test_certificates_end_to_end_with_the_heuristic_judge(
    events: list[dict[str, Any]], certificate: str, twin: dict[str, Any]
) -> None:
    res = audit_trace(events, policies=("twincheck",))["twincheck"]
    rec = res.record["decisions"][0]
    assert rec["certificate"]["name"] == certificate and rec["twin"] == twin
    assert rec["gate"]["replace"], rec["gate"]["reason"]
    assert res.continuation == "truncated" and "no environment" in res.record["continuation_reason"]
    assert res.guarded_trajectory is not None
    assert res.record["gate_score"] > 0.5


def test_every_held_certificate_is_recorded_even_without_a_valid_twin() -> None:
    b = Events(
        "nt",
        tools=[
            {
                "name": "lock_account",
                "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
            },
            {
                "name": "unlock_account",
                "parameters": {"type": "object", "properties": {"key": {"type": "integer"}}},
            },
        ],
    )
    b.user("Please lock account acc_1")
    b.call("c1", "lock_account", key="acc_1")
    b.result("c1", content="ok")
    b.call("c2", "lock_account", key="acc_1")
    b.result("c2", status="error", content="already locked")
    b.call("c3", "lock_account", key="acc_1")  # a repeat after error with no read-only tool
    res = audit_trace(b.events, policies=("twincheck",))["twincheck"]
    recs = res.record["decisions"]
    assert [r["certificate"]["name"] for r in recs] == ["repeat_after_error"]
    assert recs[0]["twin"]["kind"] == "ask_user" and recs[0]["twin_reason"]
    assert res.record["triggers"] == 1


def test_twin_failing_structural_checks_is_recorded_with_the_failed_checks() -> None:
    t = stale_card()
    # the requested value breaks the tool's schema: the twin exists but fails the checks
    t.events[0]["tools"][1]["parameters"]["properties"]["payment_method_id"] = {
        "type": "string",
        "enum": ["card_4332"],
    }
    res = audit_trace(t.events, policies=("twincheck",))["twincheck"]
    rec = res.record["decisions"][0]
    assert rec["twin"] is not None and rec["checks"]["passed"] is False
    assert rec["gate"]["reason"] == "twin failed structural checks (schema_valid)"
    assert res.continuation == "exact"


class _ContextSpy:
    """A judge that prefers the twin and keeps the context it was sent; ``reads_context`` as
    given (absent when None: a backend that does not declare it is sent the context)."""

    name = "spy"

    def __init__(self, reads: bool | None) -> None:
        if reads is not None:
            self.reads_context = reads
        self.contexts: list[str] = []

    def judge(self, request: PairRequest) -> Verdict:
        self.contexts.append(request.context)
        twin = "B" if request.orientation == "actor_first" else "A"
        return Verdict(twin, twin != "A", twin != "B", 1.0, 4.0, 0.9, self.name)


@pytest.mark.parametrize("reads", [None, True, False])
def test_judge_is_sent_the_rendered_prefix_unless_it_reads_no_context(reads: bool | None) -> None:
    spy = _ContextSpy(reads)
    audit_trace(lock_unlock_trace(), policies=("twincheck",), judge=spy)
    assert len(spy.contexts) == 2
    if reads is False:
        assert spy.contexts == ["", ""]
    else:  # the prefix before the call, as text: the lock call is in it, the unlock is not
        assert "tool call: lock_account(" in spy.contexts[0]
        assert "unlock_account" not in spy.contexts[0]
        assert spy.contexts[0] == spy.contexts[1]
