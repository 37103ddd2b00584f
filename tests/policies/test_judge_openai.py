"""The ``openai`` judge name — an alias of the ``llm`` judge — through ``audit_trace``, against
a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from policies.audit import audit_trace
from policies.judge_registry import make_judge
from policies.llm.judge import LLMJudge, parse_verdict
from policies.llm.netguard import AddressGuard
from tests.builders.events import lock_unlock_trace
from tests.fakes.openai_server import FakeOpenAI, Reply

KEY = "sk-alias-test-secret"


@pytest.fixture()
def server() -> Iterator[FakeOpenAI]:
    s = FakeOpenAI().start()
    yield s
    s.stop()


def sensible(body: dict[str, Any]) -> Reply:
    """A verifier that sees the unasked unlock as fatal, whichever side it is on."""
    user = body["messages"][-1]["content"]
    a_line = next(line for line in user.splitlines() if line.startswith("Candidate A:"))
    twin = "B" if "unlock_account" in a_line else "A"
    actor = "A" if twin == "B" else "B"
    return Reply.text(
        json.dumps(
            {
                "scores": {twin: 4, actor: 0},
                "fatal": {twin: False, actor: True},
                "prefer": twin,
                "confidence": 0.92,
            }
        )
    )


def options(server: FakeOpenAI, **kw: Any) -> dict[str, Any]:
    # The key is the caller's (never read from the environment); loopback is allowed explicitly.
    return {
        "base_url": server.url,
        "model": "judge-1",
        "timeout": 2.0,
        "max_retries": 0,
        "key": KEY,
        "guard": AddressGuard(["127.0.0.1"]),
        **kw,
    }


def test_openai_alias_builds_the_llm_judge(server: FakeOpenAI) -> None:
    judge = make_judge("openai", **options(server))
    assert isinstance(judge, LLMJudge) and judge.name == "llm"


def test_both_orientations_are_asked_blind_and_the_gate_replaces(server: FakeOpenAI) -> None:
    server.responder = sensible
    res = audit_trace(
        lock_unlock_trace(), ("twincheck",), judge="openai", judge_options=options(server)
    )["twincheck"]
    assert server.count == 2
    assert all(r.path == "/v1/chat/completions" for r in server.requests)
    assert all(r.body["model"] == "judge-1" for r in server.requests)
    assert server.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    users = [r.body["messages"][-1]["content"] for r in server.requests]
    assert "Candidate A: call unlock_account" in users[0]  # actor first
    assert "Candidate B: call unlock_account" in users[1]  # twin first
    for r in server.requests:  # blind: never which is the actor's, never the certificate
        text = json.dumps(r.body["messages"]).lower()
        assert "actor" not in text and "twin" not in text and "inverse" not in text
    rec = res.record["decisions"][0]
    assert rec["judge"] == "llm" and rec["gate"]["replace"]
    for j in rec["judgments"]:  # each judgment references its model call
        assert len(j["call"]["cache_key"]) == 64 and j["call"]["purpose"] == "verifier"
    assert KEY not in json.dumps(res.to_dict())


def test_the_llm_name_refuses_a_literal_api_key(server: FakeOpenAI) -> None:
    from policies.llm.judge import make_llm_judge

    with pytest.raises(ValueError, match="api_key: the key itself is never a setting"):
        make_llm_judge(options(server, api_key=KEY))


def test_the_openai_alias_refuses_a_literal_api_key_too(server: FakeOpenAI) -> None:
    """No key in the judge's settings (they may be stored): the key is handed to the client
    by its caller, for both names of the judge."""
    with pytest.raises(ValueError, match="api_key: the key itself is never a setting"):
        audit_trace(
            lock_unlock_trace(),
            ("twincheck",),
            judge="openai",
            judge_options=options(server, api_key="sk-from-app-settings"),
        )


@pytest.mark.parametrize(
    "reply,error",
    [
        (Reply(hang=2), "timeout"),
        (Reply.error(500), "HTTP 500"),
        (Reply.garbage(), "malformed response"),
        (Reply.text('{"prefer": "C"}'), "malformed verdict"),
        (Reply.refusal(), "model refused"),
    ],
    ids=["hang", "http500", "garbage", "bad_verdict", "refusal"],
)
def test_failures_become_judge_errors_and_keep_the_actor(
    server: FakeOpenAI, reply: Reply, error: str
) -> None:
    server.responder = lambda body: reply
    res = audit_trace(
        lock_unlock_trace(),
        ("twincheck",),
        judge="openai",
        judge_options=options(server, timeout=0.3),
    )["twincheck"]
    rec = res.record["decisions"][0]
    assert not rec["gate"]["replace"] and "judge error" in rec["gate"]["reason"]
    assert error in rec["judgments"][0]["error"]
    assert res.continuation == "exact" and res.transition == "same"


def test_connection_refused_is_a_judge_error() -> None:
    from policies.judges import PairRequest, Proposal

    judge = make_judge(
        "openai",
        base_url="http://127.0.0.1:9/v1",
        model="m",
        timeout=0.5,
        max_retries=0,
        guard=AddressGuard(["127.0.0.1"]),
    )
    v = judge.judge(PairRequest("p", "actor_first", Proposal("delete"), Proposal("delete"), ""))
    assert v.error is not None and v.error.startswith("connection error") and v.prefer is None


VALID = {
    "scores": {"A": 1, "B": 2},
    "fatal": {"A": False, "B": False},
    "prefer": "B",
    "confidence": 0.5,
}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{}",
        "[]",
        "Sure! " + json.dumps(VALID),
        json.dumps({**VALID, "fatal": {"A": "no", "B": False}}),
        json.dumps({**VALID, "scores": {"A": 9, "B": 2}}),
        json.dumps({**VALID, "confidence": 1.5}),
        json.dumps({**VALID, "prefer": "both"}),
        json.dumps({**VALID, "extra": 1}),
        json.dumps({k: v for k, v in VALID.items() if k != "confidence"}),
    ],
)
def test_parse_verdict_rejects_malformed(text: str) -> None:
    v = parse_verdict(text)
    assert v.error is not None and v.error.startswith("malformed verdict") and v.prefer is None


def test_parse_verdict_accepts_bare_and_fenced_json() -> None:
    for text in (json.dumps(VALID), "```json\n" + json.dumps(VALID) + "\n```"):
        v = parse_verdict(text)
        assert v.error is None and v.prefer == "B" and v.score_b == 2.0 and v.confidence == 0.5
