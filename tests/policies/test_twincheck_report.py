"""TwinCheck reported as the paper reports it: per-certificate counts, Fig. 2 gate ranking and
selectivity, Tables 1–3 (with the offline no-verifier control), rejections, continuations."""

from __future__ import annotations

import json

import pytest

from policies import Auditor, ToyEnvironment
from policies.stats.twincheck_report import twincheck_report
from tests.builders.events import lock_unlock_trace

from ._twin_traces import stale_card
from .test_twincheck_replay import payment_trace


def results(settings: dict | None = None) -> tuple[list[dict], list[str]]:
    env = ToyEnvironment()
    aud = Auditor(("twincheck",), {"twincheck": settings or {}}, environment=env)
    traces = [
        (lock_unlock_trace(success=False), "a"),  # inverse_action, spliced rescue
        (lock_unlock_trace("Please unlock account acc_1", success=True), "a"),  # no certificate
        (payment_trace(read_output=True).events, "b"),  # stale, needs live continuation
        (payment_trace(read_output=False).events, "b"),  # stale, spliced rescue
        (stale_card("Use the card ending in 4332").events, "b"),  # no certificate
    ]
    out = [aud.audit(events)["twincheck"].to_dict() for events, _ in traces]
    return json.loads(json.dumps(out)), [c for _, c in traces]


def test_per_certificate_counts_and_tables() -> None:
    rows, cats = results()
    rep = twincheck_report(rows, cats, n_boot=200)
    per = rep["per_certificate"]
    assert per["inverse_action"] == {
        "held": 1,
        "with_twin": 1,
        "judged": 1,
        "accepted": 1,
        "rescue": 1,
        "harm": 0,
        "same": 0,
        "unknown": 0,
        "awaiting_review": 0,
        "abstained": 0,
    }
    stale = per["unique_stale_argument"]
    assert (stale["held"], stale["accepted"], stale["rescue"], stale["unknown"]) == (2, 2, 1, 1)
    assert per["all"]["accepted"] == 3 and per["all"]["harm"] == 0
    t1 = rep["table1"]
    # unknown: the live-continuation pair and the trace with no outcome at all
    assert (t1["n"], t1["n_known"], t1["rescue"], t1["harm"], t1["unknown"]) == (5, 3, 2, 0, 2)
    assert t1["actor_pct"] == pytest.approx(100 / 3) and t1["guarded_pct"] == 100.0
    assert t1["delta_pp"] == pytest.approx(200 / 3)
    # Δ over all five tasks if both unknowns were harms / rescues: (2 ∓ 2) / 5
    assert t1["delta_bounds_pp"] == [0.0, 80.0]
    assert set(rep["table2"]) == {"a", "b"} and rep["table2"]["a"]["rescue"] == 1
    assert rep["continuations"]["modes"] == {"spliced": 2, "truncated": 1}
    assert "needs live continuation" in rep["continuations"]["reasons"]
    gate = rep["gate"]
    assert (gate["selected_failures"], gate["selected_successes"]) == (3, 0)
    assert gate["roc_auc"] == 1.0 and gate["failure_prevalence"] == 0.75  # 4 known actors
    json.dumps(rep, allow_nan=False)


def test_table3_trigger_matched_controls() -> None:
    rows, cats = results()
    control, _ = results({"verify": False})
    rep = twincheck_report(rows, cats, {"no verifier": control}, n_boot=200)
    t3 = rep["table3"]
    assert set(t3["rows"]) == {"TwinCheck (this run)", "no verifier"}
    assert t3["rows"]["no verifier"]["accepted"] == 3
    assert "selective self-revision" in t3["not_computed"]
    with pytest.raises(ValueError, match="control 'short'"):
        twincheck_report(rows, cats, {"short": control[:2]})


def test_rejections_awaiting_review_and_bad_input() -> None:
    aud = Auditor(("twincheck",), judge="human")
    rows = [aud.audit(lock_unlock_trace())["twincheck"]]
    rep = twincheck_report(rows, n_boot=50)
    assert rep["awaiting_review"] == 1 and rep["per_certificate"]["all"]["awaiting_review"] == 1
    assert rep["rejections"] == {"awaiting human review": 1}
    assert rep["table1"]["n"] == 1
    with pytest.raises(ValueError, match="one category per result"):
        twincheck_report(rows, ["a", "b"])
    empty = twincheck_report([], n_boot=10)
    assert empty["n_traces"] == 0 and empty["per_certificate"]["all"]["held"] == 0
