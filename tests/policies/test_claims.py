"""Claim records: elicited-record contract, identity across revisions, the timeline's versions."""

from __future__ import annotations

from typing import Any

import pytest

from policies.audit import audit_trace
from policies.checklist.claims import claim_changes, fold_text, merge_elicited
from policies.trace import Claims, Trace
from tests.builders.events import Events, elicited_claims


def session() -> list[dict[str, Any]]:
    """Two claims across three records; c1's text changes at the third (a new version)."""
    b = Events("v")
    b.user("Fix the parser", turn=0)
    b.add("candidate", candidate_id="p1", content="patch 1", labels={"valid": True}, turn=0)
    b.add(
        "claims",
        claims=[
            {"id": "c1", "text": "The parser handles unicode.", "confidence": 0.9},
            {"id": "c2", "text": "Docs updated", "confidence": 0.6},
        ],
        turn=0,
    )
    b.user(
        "The parser still breaks on unicode!",
        feedback={"kind": "bug_report"},
        labels={"valid": False},
        turn=1,
    )
    b.add("candidate", candidate_id="p2", content="patch 1", labels={"valid": True}, turn=1)
    b.add(
        "claims",
        claims=[
            {"id": "c1", "text": "the parser handles UNICODE", "confidence": 0.8},  # same claim
            {"id": "c2", "text": "Docs updated", "confidence": 0.6},
        ],
        turn=1,
    )
    b.user("No really, unicode parser is broken", feedback={"kind": "bug_report"}, turn=2)
    b.add("candidate", candidate_id="p3", content="patch 3", labels={"valid": False}, turn=2)
    b.add(
        "claims",
        claims=[
            {"id": "c1", "text": "The parser rejects unicode input.", "confidence": 0.4},
            {"id": "c3", "text": "Added a unicode test", "confidence": 0.7, "revises": "c2"},
        ],
        turn=2,
    )
    return b.events


def test_a_claim_whose_text_changes_starts_a_new_linked_version() -> None:
    report = audit_trace(session(), ["checklist"])["checklist"].record
    versions = report["timeline"]["versions"]
    c1 = versions["c1"]
    assert [v["version"] for v in c1] == [1, 2] and c1[1]["previous"] == 1
    assert [p["confidence"] for p in c1[0]["points"]] == [0.9, 0.8]  # case/punctuation only
    assert [p["confidence"] for p in c1[1]["points"]] == [0.4]
    assert c1[1]["starts"]["record"] == 9  # where the new version begins (event index)
    # c3 revises c2: it continues c2's lineage as its second version
    assert [(v["id"], v["version"]) for v in versions["c2"]] == [("c2", 1), ("c3", 2)]
    flat = report["timeline"]["claims"]["c1"]
    assert [p["revised"] for p in flat] == [False, False, True]
    assert [p["version"] for p in flat] == [1, 1, 2]


def test_actor_action_comes_from_the_claims_after_its_reply() -> None:
    events = session()
    report = audit_trace(events, ["checklist"])["checklist"].record
    first, second = report["feedback_events"]
    assert first["targeted"] == ["c1"] and first["action"] == "keep"
    assert first["actor_action"] == "kept" and not first["guard_diverges"]
    assert second["actor_action"] == "revised" and second["claim_changes"] == {"c1": "revised"}
    assert second["guard_diverges"]  # kept at 0.8 >= θ, the actor rewrote it


def test_claim_changes_kept_revised_dropped() -> None:
    t = Trace.from_events(session())
    recs = [e for e in t.events if isinstance(e, Claims)]
    assert claim_changes(recs[0], recs[1], ["c1", "c2"]) == {"c1": "kept", "c2": "kept"}
    assert claim_changes(recs[1], recs[2], ["c1", "c2"]) == {"c1": "revised", "c2": "revised"}
    assert claim_changes(recs[0], recs[2], ["c2", "nope"]) == {"c2": "revised"}
    no_c2 = Trace.from_events(
        [{"trace_id": "x", "type": "claims", "claims": [{"id": "c1", "text": "t"}]}]
    ).events[0]
    assert isinstance(no_c2, Claims)
    assert claim_changes(recs[0], no_c2, ["c2"]) == {"c2": "dropped"}
    assert fold_text("  The  Parser, handles: UNICODE!") == "the parser handles unicode"


def test_merge_elicited_places_records_right_after_their_reply() -> None:
    b = Events("m")
    b.user("q")
    b.add("candidate", candidate_id="a", content="x", labels={"correct": True})
    b.user("no", feedback={"kind": "challenge"}, labels={"valid": False})
    b.add("candidate", candidate_id="b", content="y", labels={"correct": False})
    shuffled = list(reversed(b.events))
    merged = merge_elicited(shuffled, [elicited_claims("m", 2, "x", 0.9)])
    assert [e["type"] for e in merged] == [
        "trace",
        "message",
        "candidate",
        "claims",
        "message",
        "candidate",
    ]
    assert "seq" not in merged[3]
    res = audit_trace(merged, ["checklist"])["checklist"]
    assert (
        res.transition == "rescue"
        and res.record["feedback_events"][0]["record_source"] == "elicited"
    )
    with pytest.raises(ValueError, match="describes_seq"):
        merge_elicited(b.events, [elicited_claims("m", 3, "x", 0.9)])  # seq 3 is a user message
    with pytest.raises(ValueError, match="meta.elicited"):
        merge_elicited(b.events, [{"type": "claims", "claims": []}])
