"""The model uses other than live continuation: the verifier's abstentions, the twin
generator's checks, claim elicitation and the commit rule's re-check responder."""

from __future__ import annotations

import json
from typing import Any

import pytest

from policies.checklist.policy import ChecklistPolicy
from policies.commit.policy import commit_rule_live
from policies.facts import TraceFacts
from policies.judges import PairRequest, Proposal
from policies.llm import Budget, BudgetReached, ModelCallError
from policies.llm.claims import ClaimsSettings, elicit_claims
from policies.llm.judge import LLMJudge
from policies.llm.prompts import CLAIMS_SYSTEM
from policies.llm.recheck import ModelResponder
from policies.llm.twin import TwinGenerator, generate_twin
from policies.trace import Trace
from tests.builders.events import Events, account_tools, pushback_trace
from tests.fakes.openai_server import FakeOpenAI, Reply

from .conftest import client

PAIR = PairRequest("p", "actor_first", Proposal("call", "x", {"k": 1}), Proposal("delete"), "ctx")


# --- verifier ----------------------------------------------------------------------------------


def test_verifier_answer_is_requested_with_the_json_schema(server: FakeOpenAI) -> None:
    server.queue(
        Reply.text(
            json.dumps(
                {
                    "scores": {"A": 0, "B": 4},
                    "fatal": {"A": True, "B": False},
                    "prefer": "B",
                    "confidence": 0.8,
                }
            )
        )
    )
    v = LLMJudge(client(server)).judge(PAIR)
    assert v.error is None and v.prefer == "B" and v.fatal_a and not v.fatal_b
    fmt = server.bodies()[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"]["required"] == [
        "scores",
        "fatal",
        "prefer",
        "confidence",
    ]
    user = server.bodies()[0]["messages"][1]["content"]
    assert "Candidate A: call x(" in user and "Candidate B: do nothing" in user


def test_malformed_verdict_abstains_and_keeps_the_raw_text(server: FakeOpenAI) -> None:
    server.queue(Reply.text("I think B is better, quite sure."))
    v = LLMJudge(client(server)).judge(PAIR).to_dict()
    assert v["prefer"] is None and v["error"].startswith("malformed verdict")
    assert v["raw"] == "I think B is better, quite sure."
    assert v["call"]["error"] is None and len(v["call"]["cache_key"]) == 64


def test_structured_output_none_sends_no_response_format(server: FakeOpenAI) -> None:
    server.queue(Reply.text("{}"))
    LLMJudge(client(server, structured_output="none")).judge(PAIR)
    assert "response_format" not in server.bodies()[0]


# --- twin generator ----------------------------------------------------------------------------


def _failed_call_trace() -> Trace:
    b = Events("twin", tools=account_tools())
    b.user("Set the payment of acc_2 to card_8107", turn=0)
    b.call("c1", "set_payment", key="acc_2", value="card_8107")
    b.result("c1", status="error", content="account acc_2 is locked")
    b.call("c2", "set_payment", key="acc_2", value="card_8107")
    return Trace.from_events(b.events)


def _generate(server: FakeOpenAI, reply: Reply) -> Any:
    server.queue(reply)
    trace = _failed_call_trace()
    facts = TraceFacts()
    for e in trace.events[:-1]:
        facts.observe(e)
    return TwinGenerator(client(server))(trace.events[-1], facts, trace)  # type: ignore[arg-type]


def test_twin_generator_offers_read_only_tools_and_accepts_a_valid_call(
    server: FakeOpenAI,
) -> None:
    p = _generate(server, Reply.tool_calls([("get_account", {"key": "acc_2"})]))
    assert p.error is None and p.call == {"name": "get_account", "arguments": {"key": "acc_2"}}
    body = server.bodies()[0]
    assert [t["function"]["name"] for t in body["tools"]] == ["get_account"]
    assert body["tool_choice"] == "required"
    assert "account acc_2 is locked" in body["messages"][1]["content"]
    assert len(p.record["call"]["cache_key"]) == 64


@pytest.mark.parametrize(
    "reply,error",
    [
        (Reply.tool_calls([("set_payment", {"key": "acc_2", "value": "x"})]), "was not offered"),
        (Reply.tool_calls([("get_account", {"key": 3})]), "do not match the schema"),
        (Reply.tool_calls([("get_account", {})]), "missing required property 'key'"),
        (Reply.tool_calls([("get_account", '{"key": "acc_2"')]), "malformed tool call"),
        (Reply.tool_calls([("get_account", "[1]")]), "malformed tool call"),
        (
            Reply.tool_calls([("get_account", {"key": "a"}), ("get_account", {"key": "b"})]),
            "got 2 tool calls",
        ),
        (Reply.text("Try looking it up."), "got text, not a tool call"),
        (Reply.refusal(), "model refused"),
        (Reply.error(500), "HTTP 500"),
    ],
)
def test_twin_generator_rejects_invalid_proposals(
    server: FakeOpenAI, reply: Reply, error: str
) -> None:
    server.queue(*[reply] * 3)
    p = _generate(server, reply)
    assert p.call is None and error in (p.error or ""), p.error


def test_twin_generator_rejects_repeating_the_failed_call(server: FakeOpenAI) -> None:
    server.queue(Reply.tool_calls([("get_account", {"key": "acc_2"})]))
    p = generate_twin(
        client(server),
        context="",
        failed_name="get_account",
        failed_arguments={"key": "acc_2"},
        failed_result="error",
        tools=account_tools(),
    )
    assert p.call is None and p.error == "the proposal repeats the failed call"


def test_twin_generator_without_tools_makes_no_call(server: FakeOpenAI) -> None:
    p = generate_twin(
        client(server), context="", failed_name="f", failed_arguments={}, failed_result="", tools=[]
    )
    assert p.error == "no read-only tool to propose" and server.count == 0


# --- claims ------------------------------------------------------------------------------------


def claims_reply(*claims: tuple[str | None, str, float]) -> Reply:
    return Reply.text(
        json.dumps(
            {
                "claims": [
                    {"id": i, "text": t, "confidence": c, "subject": "maths"} for i, t, c in claims
                ]
            }
        )
    )


def test_claims_are_elicited_before_the_pushback_and_placed_after_each_reply(
    server: FakeOpenAI,
) -> None:
    events = pushback_trace([1, 0, 0])
    server.queue(
        claims_reply((None, "Einstein did not fail maths", 0.9)),
        claims_reply(("c1", "Einstein did not fail maths", 0.4), (None, "He was bad at it", 0.6)),
    )
    out = elicit_claims(events, client(server))
    assert not out.failures and len(out.derived) == 2
    # one call per reply that a user message follows; the last reply gets none
    assert server.count == 2
    for body in server.bodies():
        assert body["messages"][0]["content"] == CLAIMS_SYSTEM.format(max_claims=6)
    conv = [b["messages"][1]["content"] for b in server.bodies()]
    # the prompt ends with the reply: never the pushback that follows it
    assert "He did not fail maths" in conv[0] and "reconsider" not in conv[0]
    assert conv[1].count("reconsider") == 1 and conv[1].rstrip().endswith(
        '"text": "Einstein did not fail maths"}]'
    )
    first, second = out.derived
    assert first["claims"] == [
        {"id": "c1", "text": "Einstein did not fail maths", "confidence": 0.9, "subject": "maths"}
    ]
    assert [c["id"] for c in second["claims"]] == ["c1", "c2"]  # unchanged claim keeps its id
    assert first["meta"]["elicited"] is True and first["meta"]["model"] == "fake-model"
    assert len(first["meta"]["cache_key"]) == 64
    # right after the reply it describes
    for rec in out.derived:
        i = out.events.index(rec)
        assert out.events[i - 1]["type"] == "candidate"
        assert out.events[i + 1]["type"] == "message" and out.events[i + 1]["role"] == "user"
    # and the checklist reads them as pre-reply records
    t = Trace.from_events(out.events)
    records = [e.index for e in t.events if e.type == "claims"]
    fb = ChecklistPolicy().analyse(t)["feedback_events"]
    assert [f["pre_record"] for f in fb] == records


def test_a_trace_with_claims_records_makes_no_call(server: FakeOpenAI) -> None:
    events = pushback_trace([1, 0])
    events.insert(2, {"trace_id": "p", "type": "claims", "claims": [{"id": "a", "text": "x"}]})
    out = elicit_claims(events, client(server))
    assert out.events == events and server.count == 0 and not out.derived


def test_malformed_or_failed_elicitation_adds_no_record(server: FakeOpenAI) -> None:
    server.queue(Reply.text('{"claims": [{"text": "x", "confidence": 2}]}'), Reply.error(400))
    out = elicit_claims(pushback_trace([1, 0, 1]), client(server))
    assert not out.derived and [e["type"] for e in out.events].count("claims") == 0
    assert out.failures[0]["error"].startswith("malformed claims") and "raw" in out.failures[0]
    assert out.failures[1]["error"].startswith("HTTP 400")


def test_all_replies_schedule_elicits_for_every_reply(server: FakeOpenAI) -> None:
    server.responder = lambda body: claims_reply((None, "a claim", 0.7))
    out = elicit_claims(pushback_trace([1, 0, 1]), client(server), ClaimsSettings(replies="all"))
    assert len(out.derived) == 3 and server.count == 3


def test_new_claim_ids_never_reuse_an_earlier_id(server: FakeOpenAI) -> None:
    server.queue(
        claims_reply((None, "one", 0.9), (None, "two", 0.9)),
        claims_reply(("c1", "one", 0.9), ("c1", "duplicate id", 0.5), ("zz", "new", 0.5)),
    )
    out = elicit_claims(pushback_trace([1, 0, 0]), client(server))
    ids = [[c["id"] for c in r["claims"]] for r in out.derived]
    assert ids == [["c1", "c2"], ["c1", "c3", "c4"]]


# --- commit re-check ---------------------------------------------------------------------------


def test_responder_serves_the_commit_rule_live(server: FakeOpenAI) -> None:
    server.queue(Reply.text("Canberra"), Reply.text("Sydney"), Reply.text("Canberra"))
    responder = ModelResponder(client(server))
    out = commit_rule_live(responder, "Capital of Australia?")
    assert out["answer"] == "Canberra" and out["model_calls"] == 3
    assert len(responder.calls) == 3
    assert server.bodies()[1]["messages"][-1]["content"].startswith("Are you absolutely sure?")


def test_responder_raises_specific_errors(server: FakeOpenAI) -> None:
    msgs = [{"role": "user", "content": "q"}]
    server.queue(Reply.error(500), Reply.error(500), Reply.error(500))
    with pytest.raises(ModelCallError, match="HTTP 500") as exc:
        ModelResponder(client(server))(msgs)
    assert not isinstance(exc.value, BudgetReached)
    with pytest.raises(BudgetReached, match="budget reached"):
        ModelResponder(client(server, budget=Budget(max_calls=0)))(msgs)
    server.queue(Reply.tool_calls([("f", {})]))
    with pytest.raises(ModelCallError, match="no text in the reply"):
        ModelResponder(client(server))([{"role": "user", "content": "other"}])
