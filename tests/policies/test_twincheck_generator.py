"""TwinCheck's generator hook (App. Fig. 5: "the generator proposes an evidence-gathering
call"): with a model twin generator, repeat-after-error's twin is the model's proposal — over
real HTTP to the scripted OpenAI-compatible server — checked like any twin; when the model
proposes nothing usable, the deterministic twin stands and the record says why."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from policies import Auditor
from policies.llm.twin import TwinGenerator
from tests.builders.events import Events, account_tools
from tests.fakes.openai_server import FakeOpenAI, Reply

from .llm.conftest import client

KEY = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}


@pytest.fixture()
def server() -> Iterator[FakeOpenAI]:
    s = FakeOpenAI().start()
    yield s
    s.stop()


def repeat_trace() -> list[dict]:
    tools = [*account_tools(), {"name": "list_cards", "parameters": KEY, "read_only": True}]
    b = Events("gen", tools=tools)
    b.user("Change the payment of acc_7 to card_1")
    b.call("c1", "set_payment", key="acc_7", value="card_1")
    b.result("c1", status="error", content="payment method not found")
    b.call("c2", "set_payment", key="acc_7", value="card_1")
    return b.events


def test_the_generators_call_is_the_twin_and_passes_the_same_gate(server: FakeOpenAI) -> None:
    server.queue(Reply.tool_calls([("list_cards", {"key": "acc_7"})]))
    auditor = Auditor(("twincheck",), twin_generator=TwinGenerator(client(server)))
    rec = auditor.audit(repeat_trace())["twincheck"].record["decisions"][0]
    assert rec["twin"] == {
        "kind": "call",
        "name": "list_cards",
        "arguments": {"key": "acc_7"},
        "text": "",
    }
    assert rec["twin_reason"].startswith("model-generated")
    gen = rec["certificate"]["generator"]
    assert gen["error"] is None and len(gen["call"]["cache_key"]) == 64
    assert rec["certificate"]["candidates"][0]["tool"] == "get_account"  # the offline ranking
    assert rec["checks"]["passed"] and rec["gate"]["replace"]
    offered = [t["function"]["name"] for t in server.bodies()[0]["tools"]]
    assert offered == ["get_account", "list_cards"]  # read-only tools only


def test_without_a_usable_proposal_the_deterministic_twin_stands(server: FakeOpenAI) -> None:
    server.queue(Reply.text("Maybe look at the account?"))
    auditor = Auditor(("twincheck",), twin_generator=TwinGenerator(client(server)))
    rec = auditor.audit(repeat_trace())["twincheck"].record["decisions"][0]
    assert rec["twin"]["name"] == "get_account"
    assert rec["twin_reason"].startswith("generator: expected exactly one tool call")
    assert rec["certificate"]["generator"]["error"].startswith("expected exactly one tool call")


def test_other_certificates_never_ask_the_generator(server: FakeOpenAI) -> None:
    from tests.builders.events import lock_unlock_trace

    auditor = Auditor(("twincheck",), twin_generator=TwinGenerator(client(server)))
    rec = auditor.audit(lock_unlock_trace())["twincheck"].record["decisions"][0]
    assert rec["certificate"]["name"] == "inverse_action" and server.count == 0
