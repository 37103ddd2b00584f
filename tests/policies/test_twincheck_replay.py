"""Valid continuations only (SPEC §4): exact replay until the first accepted
replacement; spliced when the twin deletes/completes or nothing later reads the replaced
call's output; otherwise "needs live continuation"; a live continuer hook."""

from __future__ import annotations

from typing import Any

from policies import ToyEnvironment, audit_trace, replay
from policies.environments.base import Environment
from policies.replay import NEEDS_LIVE, output_readers
from policies.trace import Trace
from policies.twincheck.policy import TwinCheckPolicy
from tests.builders.events import Events, lock_unlock_trace

KEY = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
KV = {
    "type": "object",
    "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
    "required": ["key", "value"],
}


def payment_trace(read_output: bool) -> Events:
    """Fig. 6 in a toy world: the actor pays with the stale card; its result carries a
    confirmation id that a later recorded call may read."""
    b = Events(
        "pay",
        tools=[
            {"name": "get_cards", "parameters": KEY, "read_only": True},
            {"name": "set_payment", "parameters": KV},
            {"name": "get_receipt", "parameters": KEY, "read_only": True},
            {"name": "set_note", "parameters": KV},
        ],
        env={
            "name": "toy",
            "config": {
                "state": {"cards": ["card_4332", "card_8107"], "CONF_77123": "receipt"},
                "goal": {"payment": "card_8107"},
            },
        },
        outcome={"success": False},
    )
    b.user("Which cards do I have?", turn=0)
    b.call("c1", "get_cards", key="cards")
    b.result("c1", content={"cards": ["card_4332", "card_8107"]})
    b.user("Use the card ending in 8107 for the payment.", turn=1)
    b.call("c2", "set_payment", turn=1, key="payment", value="card_4332")
    b.result("c2", turn=1, content={"payment": "card_4332", "confirmation": "CONF_77123"})
    if read_output:
        b.call("c3", "get_receipt", turn=1, key="CONF_77123")
    else:
        b.call("c3", "set_note", turn=1, key="payment_note", value="paid")
    b.result("c3", turn=1, content="ok")
    return b


def test_output_readers_finds_later_calls_that_read_a_result() -> None:
    t = Trace.from_events(payment_trace(read_output=True).events)
    assert output_readers(t, 5) == [{"index": 7, "name": "get_receipt", "values": ["CONF_77123"]}]
    t2 = Trace.from_events(payment_trace(read_output=False).events)
    assert output_readers(t2, 5) == []  # "payment"/"card_4332" were known before the call


def test_twin_call_whose_output_a_later_call_reads_needs_live_continuation() -> None:
    res = audit_trace(
        payment_trace(read_output=True).events, ("twincheck",), environment=ToyEnvironment()
    )["twincheck"]
    assert res.record["decisions"][0]["certificate"]["name"] == "unique_stale_argument"
    assert res.record["accepted"] == 1
    assert res.continuation == "truncated" and res.guarded_success is None
    assert res.transition == "unknown"
    reason = res.record["continuation_reason"]
    assert reason.startswith(NEEDS_LIVE) and "#7 (get_receipt)" in reason and "CONF_77123" in reason


def test_twin_call_with_unread_output_is_spliced_and_scored_by_the_environment() -> None:
    env = ToyEnvironment()
    res = audit_trace(payment_trace(read_output=False).events, ("twincheck",), environment=env)[
        "twincheck"
    ]
    assert (
        res.continuation == "spliced" and "reads the replaced" in res.record["continuation_reason"]
    )
    assert (res.actor_success, res.guarded_success, res.transition) == (False, True, "rescue")
    assert [c[0] for c in env.calls] == ["get_cards", "set_payment", "set_note"]
    assert env.calls[1][1]["value"] == "card_8107"


def test_deletion_and_completion_twins_are_spliced() -> None:
    res = audit_trace(lock_unlock_trace(), ("twincheck",), environment=ToyEnvironment())[
        "twincheck"
    ]
    assert res.continuation == "spliced"
    assert res.record["continuation_reason"] == "the replacement deletes the call or ends the turn"


def test_without_an_environment_the_outcome_is_unknown_and_says_why() -> None:
    res = audit_trace(payment_trace(read_output=True).events, ("twincheck",))["twincheck"]
    assert res.continuation == "truncated" and "no environment" in res.record["continuation_reason"]


class Continuer:
    """A live continuation as the model-backends module provides one (client bound in)."""

    def __init__(self, full: bool = False) -> None:
        self.full = full
        self.seen: list[Any] = []

    def __call__(
        self,
        trace: Trace,
        prefix: list[dict[str, Any]],
        replacement: list[dict[str, Any]],
        environment: Environment | None,
    ) -> tuple[list[dict[str, Any]], bool | None, list[dict[str, Any]]]:
        state = environment.state() if environment is not None else None
        self.seen.append((trace.trace_id, len(prefix), [r["type"] for r in replacement], state))
        done = {
            "trace_id": trace.trace_id,
            "type": "message",
            "role": "assistant",
            "content": "Paid.",
        }
        events = [*prefix, *replacement, done] if self.full else [done]
        success = environment.check() if environment is not None else None
        return events, success, [{"name": "model", "tokens": 3}]


def test_live_continuer_gets_the_environment_in_the_replacements_state() -> None:
    cont = Continuer()
    events = payment_trace(read_output=True).events
    r = replay(events, [TwinCheckPolicy()], ToyEnvironment(), continuer=cont)
    assert r.continuation == "live" and r.continuation_reason == "live continuation"
    [(tid, n_prefix, kinds, state)] = cont.seen
    assert (tid, n_prefix, kinds) == ("pay", 5, ["tool_call", "tool_result"])
    assert state["payment"] == "card_8107"  # the twin was executed before the model continues
    assert r.guarded_success is True and r.environment_log[-1] == {"name": "model", "tokens": 3}
    assert r.trajectory[:5] == events[:5] and r.trajectory[-1]["content"] == "Paid."
    assert len(r.trajectory) == 5 + 2 + 1


def test_a_continuer_that_returns_the_whole_trajectory_is_not_duplicated() -> None:
    events = payment_trace(read_output=True).events
    r = replay(events, [TwinCheckPolicy()], ToyEnvironment(), continuer=Continuer(full=True))
    assert len(r.trajectory) == 5 + 2 + 1


def test_live_continuer_through_audit_trace_without_environment() -> None:
    cont = Continuer()
    res = audit_trace(payment_trace(read_output=True).events, ("twincheck",), continuer=cont)
    r = res["twincheck"]
    assert r.continuation == "live" and r.guarded_success is None and cont.seen[0][3] is None


def test_toy_environment_forgets_the_previous_traces_goal() -> None:
    env = ToyEnvironment()
    audit_trace(payment_trace(read_output=False).events, ("twincheck",), environment=env)
    b = Events("nogoal")
    b.user("hi")
    b.call("c1", "get_cards", key="cards")
    assert replay(b.events, [], env).actor_success is None
