"""A whole model-backed audit, as a run does it: re-running it from its cache makes no request
and gives byte-identical results (online or offline); a hostile endpoint fails only the
affected decisions, each with its reason."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from policies.audit import Auditor, audit_trace
from policies.commit.policy import commit_rule_live
from policies.llm import FileCache
from policies.llm.claims import elicit_claims
from policies.llm.run import LLMRun, LLMSettings
from policies.trace import Trace
from tests.builders.events import lock_unlock_trace, pushback_trace
from tests.fakes.openai_server import FakeOpenAI, Reply

from .conftest import KEY, LOCAL
from .scripts import is_verifier, verifier_against

pytest.importorskip("bfcl_eval")

from policies.environments.bfcl import BFCLEnvironment  # noqa: E402
from policies.twincheck.policy import TwinCheckPolicy  # noqa: E402

from .scripts import bfcl_actor  # noqa: E402
from .test_live_bfcl import SOLUTION, failing_actor  # noqa: E402


def settings(server_url: str, **kw: Any) -> LLMSettings:
    return LLMSettings.from_mapping(
        {
            "endpoint": {
                "base_url": server_url,
                "model": "fake-model",
                "timeout": 1.0,
                "max_retries": 1,
                "backoff_base": 0.01,
                **kw.pop("endpoint", {}),
            },
            "uses": ["judge", "claims", "live", "recheck"],
            "models": {"live": "actor-model"},
            **kw,
        }
    )


def responder(body: dict[str, Any]) -> Reply:
    if is_verifier(body):
        user = body["messages"][-1]["content"]
        bad = "unlock_account" if "unlock_account" in user else "call cd("
        return verifier_against(bad)(body)
    if body.get("tools"):
        return bfcl_actor(SOLUTION)(body)
    if body.get("response_format"):  # claim elicitation
        n = len(body["messages"][1]["content"])
        return Reply.text(
            json.dumps(
                {
                    "claims": [
                        {
                            "id": None,
                            "text": "He did not fail maths",
                            "confidence": 0.8 + (n % 7) / 100,
                            "subject": "maths",
                        }
                    ]
                }
            )
        )
    # the commit rule's re-check: a model that flips once
    asked = sum(1 for m in body["messages"] if m["role"] == "user")
    return Reply.text("Canberra" if asked != 2 else "Sydney")


def audit(run: LLMRun) -> bytes:
    """Everything a model-backed run decides, as JSON bytes."""
    out: dict[str, Any] = {}
    judge = run.judge()
    out["twincheck"] = audit_trace(lock_unlock_trace(), ("twincheck",), judge=judge)[
        "twincheck"
    ].to_dict()
    elicited = elicit_claims(pushback_trace([1, 0, 1]), run.client("claims"))
    out["claims"] = [elicited.derived, elicited.calls, elicited.failures]
    out["checklist"] = Auditor(("checklist",)).audit(elicited.events)["checklist"].to_dict()
    trace = Trace.from_events(failing_actor())
    d = next(d for d in TwinCheckPolicy(judge=judge).decisions(trace) if d.replace)
    cont = run.continuer()
    assert cont is not None
    out["live"] = cont(
        trace, [e.raw for e in trace.events[: d.index]], d.replacement, BFCLEnvironment()
    )
    resp = run.responder()
    assert resp is not None
    out["commit"] = [commit_rule_live(resp, "Capital of Australia?"), resp.calls]
    return json.dumps(out, sort_keys=True).encode()


def test_rerun_from_cache_is_byte_identical_and_makes_no_request(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    server.responder = responder
    cache_dir = tmp_path / "cache"
    first_run = LLMRun(settings(server.url), FileCache(cache_dir), KEY, LOCAL)
    first = audit(first_run)
    n = server.count
    assert n > 10
    assert first_run.summary()["cache_misses"] == n
    models = {b["model"] for b in server.bodies()}
    assert models == {"fake-model", "actor-model"}  # the live actor has its own model

    again_run = LLMRun(settings(server.url), FileCache(cache_dir), KEY, LOCAL)
    again = audit(again_run)
    # Offline: the same endpoint's answers (the cache is keyed by the endpoint's URL too).
    offline_run = LLMRun(settings(server.url, endpoint={"offline": True}), FileCache(cache_dir))
    offline = audit(offline_run)
    assert server.count == n  # zero HTTP requests on re-runs
    assert first == again == offline
    s = again_run.summary()
    assert s["cache_hits"] == s["calls"] == first_run.summary()["calls"]
    assert s["http_requests"] == 0 and s["failures"] == 0


def test_hostile_endpoint_fails_only_the_affected_decisions(server: FakeOpenAI) -> None:
    """The verifier endpoint answers garbage, huge bodies, hangs, 500s and refusals for some
    traces: those decisions fail with a recorded reason, the others are judged normally, and
    the run goes on."""
    traces = {f"t{i}": lock_unlock_trace() for i in range(6)}
    for tid, events in traces.items():
        for e in events:
            e["trace_id"] = tid
            if e.get("role") == "user":
                e["content"] = f"Please lock account acc_1 ({tid})"
    hostile = {
        "t1": Reply.garbage(),
        "t2": Reply.huge(3_000_000, declare_length=False),
        "t3": Reply(hang=5),
        "t4": Reply.error(500),
        "t5": Reply.refusal(),
    }

    def answer(body: dict[str, Any]) -> Reply:
        user = body["messages"][-1]["content"]
        tid = user.split("(")[1].split(")")[0] if "(t" in user else "t0"
        return hostile.get(tid) or verifier_against("unlock_account")(body)

    server.responder = answer
    run = LLMRun(
        settings(server.url, endpoint={"timeout": 0.3, "max_response_bytes": 1_000_000}),
        api_key=KEY,
        guard=LOCAL,
    )
    auditor = Auditor(("twincheck",), judge=run.judge())
    start = time.monotonic()
    results = {tid: auditor.audit(ev)["twincheck"] for tid, ev in traces.items()}
    assert time.monotonic() - start < 15
    assert results["t0"].record["decisions"][0]["gate"]["replace"] is True
    reasons = {tid: r.record["decisions"][0]["judgments"][0]["error"] for tid, r in results.items()}
    assert reasons["t0"] is None
    assert reasons["t1"].startswith("malformed response: the endpoint answered with non-JSON")
    assert reasons["t2"].startswith("response too large")
    assert reasons["t3"].startswith("timeout")
    assert reasons["t4"].startswith("HTTP 500")
    assert reasons["t5"].startswith("model refused")
    for tid in hostile:
        rec = results[tid].record["decisions"][0]
        assert rec["gate"]["replace"] is False and "judge error" in rec["gate"]["reason"]
        assert results[tid].transition == "same"
    summary = run.summary()
    assert summary["failures"] == 10 and summary["calls"] == 12


def test_settings_reject_unknown_uses_and_keys() -> None:
    with pytest.raises(ValueError, match="unknown model uses: verify"):
        LLMSettings.from_mapping({"endpoint": {"model": "m", "offline": True}, "uses": ["verify"]})
    with pytest.raises(ValueError, match="unknown model-run settings: budget"):
        LLMSettings.from_mapping({"endpoint": {"model": "m", "offline": True}, "budget": 3})
    s = settings("http://localhost:1/v1", max_calls=5)
    assert LLMSettings.from_mapping(s.to_dict()) == s
    run = LLMRun(
        LLMSettings.from_mapping({"endpoint": {"model": "m", "offline": True}, "uses": []})
    )
    assert run.judge() is None and run.continuer() is None and run.responder() is None


def test_budget_stop_is_reported_for_the_run(server: FakeOpenAI) -> None:
    server.responder = responder
    run = LLMRun(settings(server.url, max_calls=1), api_key=KEY, guard=LOCAL)
    res = audit_trace(lock_unlock_trace(), ("twincheck",), judge=run.judge())["twincheck"]
    rec = res.record["decisions"][0]
    assert rec["judgments"][1]["error"] == "budget reached"
    assert not rec["gate"]["replace"] and res.transition == "same"
    s = run.summary()
    assert s["budget_reached"] and s["budget_message"].startswith("Model budget reached (1 of 1")
