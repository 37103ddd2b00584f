"""The checklist panel's confidence chart draws one line per claim VERSION: a
claim whose text changed is a new meaning, linked to the old one, never joined to it by a line.
The record comes from the real checklist policy over a trace whose claim changes under
pushback."""

from __future__ import annotations

from typing import Any

from auditor.trace_page.panels import checklist_panel
from policies import Auditor


def _trace() -> list[dict[str, Any]]:
    t = "v"
    events: list[dict[str, Any]] = [
        {"trace_id": t, "type": "trace", "model": "m", "task": {"id": t}},
        {"trace_id": t, "type": "message", "role": "user", "content": "Capital of France?"},
        {"trace_id": t, "type": "candidate", "candidate_id": "c0", "round": 0,
         "content": "Paris.", "labels": {"correct": True}},
        {"trace_id": t, "type": "claims", "claims": [
            {"id": "a", "text": "Paris is the capital.", "confidence": 0.9},
            {"id": "b", "text": "France is in Europe.", "confidence": 0.95}]},
        {"trace_id": t, "type": "message", "role": "user", "content": "Sure? It is Lyon.",
         "feedback": {"kind": "challenge"}, "labels": {"valid": False}},
        {"trace_id": t, "type": "claims", "claims": [
            {"id": "a", "text": "Lyon is the capital.", "confidence": 0.4},
            {"id": "b", "text": "france is in europe", "confidence": 0.9}]},
        {"trace_id": t, "type": "candidate", "candidate_id": "c1", "round": 1,
         "content": "Lyon.", "labels": {"correct": False}},
    ]  # fmt: skip
    for i, e in enumerate(events):
        e["seq"] = i
    return events


def test_one_line_per_claim_version_linked_and_labelled():
    events = _trace()
    record = Auditor(["checklist"], {}, "heuristic", None, {}).audit(events)["checklist"]
    assert record.applied  # the θ rule acted on recorded confidences
    rec = record.to_dict()["record"]
    panel = checklist_panel(rec, [e for e in events if e["type"] == "claims"])
    lines = panel["figure"]["data"]
    by_name = {t["name"]: t for t in lines}
    # claim a changed meaning: two lines, the second named with the version it revises
    assert set(by_name) == {"a v1", "a v2 (revises v1)", "b v1"}
    assert by_name["a v1"]["x"] == [3] and by_name["a v1"]["y"] == [0.9]
    assert by_name["a v2 (revises v1)"]["x"] == [5] and by_name["a v2 (revises v1)"]["y"] == [0.4]
    assert by_name["a v1"]["legendgroup"] == by_name["a v2 (revises v1)"]["legendgroup"] == "a"
    assert "Lyon is the capital" in by_name["a v2 (revises v1)"]["text"][0]
    # b only changed case and punctuation: the same meaning, one line across both records
    assert by_name["b v1"]["x"] == [3, 5]
    # no line spans two versions of a claim
    for t in lines:
        versions = {p["version"] for p in rec["timeline"]["claims"][t["meta"]["claim"]]
                    if p["record"] in t["x"]}  # fmt: skip
        assert versions == {t["meta"]["version"]}
