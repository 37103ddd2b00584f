"""The heuristic judge: blind to the certificate, scores each candidate on its own from trace
facts, confidence from the agreement of independent signal families, abstains without
evidence, and a documented position prior on ties that the counterbalanced gate rejects."""

from __future__ import annotations

import dataclasses

from policies.facts import TraceFacts
from policies.heuristic_judge import HeuristicJudge, asks_for_information, evidence
from policies.judges import PairRequest, Proposal, Verdict
from policies.tool_profile import build_profile
from policies.trace import ToolCall, Trace
from policies.twincheck.policy import TwinCheckSettings, switch_gate
from tests.builders.events import Events, account_tools

from ._twin_traces import brake_release

GATE = TwinCheckSettings()
COMPLETE = Proposal("completion", text="The requested operation is complete.")


def prefix(b: Events) -> tuple[Trace, TraceFacts, ToolCall]:
    t = Trace.from_events(b.events)
    call = [e for e in t.events if isinstance(e, ToolCall)][-1]
    f = TraceFacts()
    for e in t.events[: call.index]:
        f.observe(e)
    return t, f, call


def both(t: Trace, f: TraceFacts, actor: Proposal, twin: Proposal) -> tuple[Verdict, Verdict]:
    j = HeuristicJudge()
    return (
        j.judge(PairRequest("p", "actor_first", actor, twin, "", t, f)),
        j.judge(PairRequest("p", "twin_first", twin, actor, "", t, f)),
    )


def test_the_verifier_never_receives_the_certificate() -> None:
    fields = {f.name for f in dataclasses.fields(PairRequest)}
    assert fields == {"pair_id", "orientation", "a", "b", "context", "trace", "facts"}
    assert not {f.name for f in dataclasses.fields(Proposal)} & {"certificate", "actor", "twin"}


def test_unasked_brake_release_loses_to_the_completion_in_both_orders() -> None:
    t, f, call = prefix(brake_release())
    actor = Proposal("call", call.name, dict(call.arguments))
    v1, v2 = both(t, f, actor, COMPLETE)
    assert (v1.prefer, v2.prefer) == ("B", "A") and v1.fatal_a and not v1.fatal_b
    assert "request does not ask" in " ".join(v1.evidence["A"]["notes"])
    assert switch_gate(v1, v2, GATE).replace


def test_it_can_side_with_the_actor_when_the_request_asks_for_information() -> None:
    # the same certificate holds, but ending the turn would drop reads the user asked for
    t, f, call = prefix(brake_release("Start the engine. Can you verify the fuel level too?"))
    actor = Proposal("call", call.name, dict(call.arguments))
    v1, v2 = both(t, f, actor, COMPLETE)
    assert v1.fatal_b and v2.fatal_a  # a completion that skips the asked-for read
    assert not switch_gate(v1, v2, GATE).replace


def test_abstains_without_evidence_and_the_gate_keeps_the_actor() -> None:
    t, f, _ = prefix(brake_release())
    v = HeuristicJudge().judge(
        PairRequest("p", "actor_first", Proposal("delete"), Proposal("delete"), "", t, f)
    )
    assert v.abstained and v.prefer is None and "no signal" in v.reason
    g = switch_gate(v, v, GATE)
    assert not g.replace and g.abstained and "abstained" in g.reason
    assert HeuristicJudge().judge(PairRequest("p", "actor_first", COMPLETE, COMPLETE, "")).abstained


def test_a_tie_meets_the_position_prior_and_the_orders_disagree() -> None:
    b = Events("tie", tools=account_tools())
    b.user("Please lock account acc_1")
    b.call("c1", "set_payment", key="acc_1", value="card")
    b.result("c1", status="error", content="no card")
    b.call("c2", "lock_account", key="acc_1")
    t, f, _ = prefix(b)
    read = Proposal("call", "get_account", {"key": "acc_1"})  # gathers evidence after a failure
    lock = Proposal("call", "lock_account", {"key": "acc_1"})  # what the request asks
    v1, v2 = both(t, f, read, lock)
    assert not v1.abstained and v1.score_a == v1.score_b
    assert v1.prefer == v2.prefer == "A" and v1.confidence == 0.5 == v2.confidence
    g = switch_gate(v1, v2, GATE)
    assert not g.replace and "does not prefer the twin" in g.reason


def test_confidence_comes_from_agreeing_signals_not_from_the_margin() -> None:
    b = Events("conf", tools=account_tools())
    b.user("Change the payment of acc_7 to card_1")
    b.call("c1", "set_payment", key="acc_7", value="card_1")
    b.result("c1", status="error", content="payment method not found")
    b.call("c2", "set_payment", key="acc_7", value="card_1")
    t, f, call = prefix(b)
    actor = Proposal("call", call.name, dict(call.arguments))
    read = Proposal("call", "get_account", {"key": "acc_7"})
    v, _ = both(t, f, actor, read)
    # for the read: failed_repeat (LR 9) and turn_state (LR 3); for the actor: request_action
    # (LR 3, "payment" is asked for) — posterior 9 / (1 + 9)
    assert v.prefer == "B" and v.confidence == 0.9 and v.score_b - v.score_a == 3
    # the same pair after the user spoke again: the failure is no longer this turn's, so
    # turn_state no longer votes — the same margin, less agreement, lower confidence
    b.events.insert(
        -1,
        {
            "trace_id": "conf",
            "type": "message",
            "role": "user",
            "content": "Change the payment, please.",
        },
    )
    for i, e in enumerate(b.events):
        e["seq"] = i
    t, f, call = prefix(b)
    w, _ = both(t, f, actor, read)
    assert w.prefer == "B" and w.score_b - w.score_a == 3 and w.confidence == 0.75


def test_signals_read_trace_facts() -> None:
    t, f, call = prefix(brake_release())
    p = build_profile(t)
    release = evidence(Proposal("call", "releaseBrakePedal"), f, p)
    assert release.values["request_action"] == -1 and release.fatal
    b0 = brake_release()
    b0.events = b0.events[:5]  # right after "Brake pedal needs to be pressed"
    t0, f0, _ = prefix(b0)
    press = evidence(Proposal("call", "pressBrakePedal", {"pedalPosition": 1.0}), f0, p)
    assert press.values["request_action"] == 1  # the unresolved error asks for it
    assert (
        evidence(Proposal("call", "pressBrakePedal", {"pedalPosition": 1.0}), f, p).values[
            "request_action"
        ]
        == -1
    )  # once the engine runs, nothing asks for it any more
    unknown = evidence(Proposal("call", "fly", {}), f, p)
    assert unknown.values["validity"] == -1 and unknown.fatal
    loose = evidence(Proposal("call", "pressBrakePedal", {"pedalPosition": 0.37}), f, p)
    assert loose.values["grounding"] == -1
    read = evidence(Proposal("call", "check_tire_pressure"), f, p)
    assert read.values["request_action"] == 0 and not read.fatal
    b = Events("opp", tools=account_tools())
    b.user("Please lock account acc_1")
    b.call("c1", "lock_account", key="acc_1")
    t2, f2, _ = prefix(b)
    opposite = evidence(Proposal("call", "unlock_account", {"key": "acc_1"}), f2, build_profile(t2))
    assert opposite.values["request_action"] == -1 and "opposite" in opposite.notes[-1]


def test_completion_with_an_unresolved_failure_is_fatal_and_asking_the_user_is_not() -> None:
    b = Events("fail", tools=account_tools())
    b.user("Lock acc_1")
    b.call("c1", "lock_account", key="acc_1")
    b.result("c1", status="error", content="denied")
    b.call("c2", "lock_account", key="acc_1")
    t, f, _ = prefix(b)
    p = build_profile(t)
    assert evidence(COMPLETE, f, p).fatal
    ask = evidence(Proposal("ask_user", text="How should I proceed?"), f, p)
    assert ask.values["turn_state"] == 1 and not ask.fatal


def test_asks_for_information() -> None:
    assert asks_for_information("Could we verify the engine status?")
    assert asks_for_information("Show me the doors")
    assert not asks_for_information("Please start the engine.")
