"""Property tests (hypothesis) for TwinCheck's invariants on random tool-use traces: the
certificates read only the prefix, a recorded twin never equals the actor's call once it passed
the checks, the gate never replaces on an abstention or a judge error, and an audit of any
such trace is strict JSON with a continuation the engine knows."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from policies import audit_trace
from policies.certificates import CERTIFICATES, CertContext
from policies.facts import TraceFacts
from policies.tool_profile import build_profile
from policies.trace import ToolCall, Trace

from ._twin_traces import MESSAGES, VEHICLE, bfcl

CALLS = [
    ("pressBrakePedal", {"pedalPosition": 1.0}),
    ("releaseBrakePedal", {}),
    ("startEngine", {"ignitionMode": "START"}),
    ("startEngine", {"ignitionMode": "STOP"}),
    ("lockDoors", {"unlock": False, "door": ["driver"]}),
    ("lockDoors", {"unlock": True, "door": ["driver"]}),
    ("displayCarStatus", {"option": "fuel"}),
    ("get_user_id", {"user": "Bob"}),
    ("send_message", {"receiver_id": "USR002", "message": "hi"}),
]
RESULTS = [
    ("ok", '{"status": "done"}'),
    ("ok", '{"user_id": "USR002"}'),
    ("ok", '{"user_id": "USR003"}'),
    ("error", '{"error": "Brake pedal needs to be pressed."}'),
]
USERS = ["Start the engine.", "Send it to USR003 instead.", "Release the brake.", "Thanks."]

steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("call"), st.integers(0, len(CALLS) - 1), st.integers(0, len(RESULTS) - 1)
        ),
        st.tuples(st.just("user"), st.integers(0, len(USERS) - 1), st.just(0)),
    ),
    min_size=1,
    max_size=14,
)


def build(plan: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
    b = bfcl("p", VEHICLE + MESSAGES)
    b.user("Please start the engine and message Bob.")
    for k, (kind, i, j) in enumerate(plan):
        if kind == "user":
            b.user(USERS[i])
            continue
        name, args = CALLS[i]
        b.call(f"c{k}", name, **args)
        status, content = RESULTS[j]
        b.result(f"c{k}", status=status, content=content)
    return b.events


@given(plan=steps)
@settings(max_examples=120, deadline=None)
def test_certificates_read_only_the_prefix(plan: list[tuple[str, int, int]]) -> None:
    events = build(plan)
    full = Trace.from_events(events)
    for call in [e for e in full.events if isinstance(e, ToolCall)]:
        cut = Trace.from_events(events[: call.index + 1])
        hits = []
        for t in (full, cut):
            f = TraceFacts()
            for e in t.events[: call.index]:
                f.observe(e)
            ctx = CertContext(t, f, build_profile(t))
            hits.append([cert(t.events[call.index], ctx) for cert in CERTIFICATES.values()])  # type: ignore[arg-type]
        assert hits[0] == hits[1]


@given(plan=steps, judge=st.sampled_from(["heuristic", "human", "recorded"]))
@settings(max_examples=120, deadline=None)
def test_audits_are_strict_json_and_never_replace_without_a_verdict(
    plan: list[tuple[str, int, int]], judge: str
) -> None:
    res = audit_trace(build(plan), ("twincheck",), judge=judge)["twincheck"]
    d = res.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert res.continuation in ("exact", "truncated")  # no environment: never spliced
    assert res.transition in ("same", "unknown", "not_applicable")  # … never a rescue or harm
    # not applicable exactly when there is no tool call to decide on
    assert (res.transition == "not_applicable") == (res.record["tool_calls"] == 0)
    for rec in res.record["decisions"]:
        gate = rec["gate"]
        if rec["checks"] and rec["checks"]["passed"]:
            twin = rec["twin"]
            assert not (
                twin["name"] == rec["call"]["name"]
                and twin["arguments"] == rec["call"]["arguments"]
            )
        views = gate.get("orientations") or []
        if any(v["abstained"] or v["error"] for v in views):
            assert not gate["replace"]
        if judge != "heuristic":
            assert not gate["replace"]  # nothing recorded, nobody reviewed: the actor stands
    if judge == "human":
        waiting = {(w["pair"], tuple(w["orientations"])) for w in res.record["awaiting_review"]}
        judged = {
            (r["pair"], ("actor_first", "twin_first"))
            for r in res.record["decisions"]
            if r["judgments"]
        }
        assert waiting == judged
