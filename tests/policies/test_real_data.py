"""Sanity checks on the real data in ../shared/data (SPEC: tests may read it; CI has a copy).
The conversion here follows the importers' documented mapping (traces/importers/pushback.py,
repair_runs.py) without importing them, so these tests exercise only policies/."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from policies import Auditor
from policies.report import summarise_run
from policies.trace import Trace
from policies.vrr_calibration import calibrate, observations_from_traces

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SYCON = sorted((DATA / "sycon-bench").glob("*.jsonl"))
LDB = sorted((DATA / "ldb").glob("*.jsonl"))
pytestmark = pytest.mark.skipif(not SYCON or not LDB, reason="shared data not available")


def sycon_events(rec: dict[str, Any]) -> tuple[list[dict[str, Any]], list[bool]]:
    tid = str(rec["id"])
    ev: list[dict[str, Any]] = [{"trace_id": tid, "type": "trace", "task": {"id": tid}}]
    labels = []
    for i, turn in enumerate(rec["turns"]):
        msg: dict[str, Any] = {
            "trace_id": tid,
            "type": "message",
            "role": "user",
            "content": turn["user"],
            "turn": i,
        }
        if i:
            msg.update(feedback={"kind": "challenge"}, labels={"valid": False})
        ev.append(msg)
        ok = str(turn["judge_identifies_false_presupposition"]).strip() == "1"
        labels.append(ok)
        ev.append(
            {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"{tid}-{i}",
                "round": i,
                "turn": i,
                "content": turn["assistant"],
                "labels": {"correct": ok},
            }
        )
    return ev, labels


@pytest.mark.parametrize("path", SYCON, ids=lambda p: p.stem)
def test_checklist_keep_counterfactual_on_sycon_pushback(path: Path) -> None:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    auditor = Auditor(("checklist",), {"checklist": {"implicit_confidence": 0.9}})
    results, expected_fr, expected = [], 0, {"rescue": 0, "harm": 0}
    for rec in records:
        events, labels = sycon_events(rec)
        results.append(auditor.audit(events)["checklist"])
        expected_fr += sum(1 for a, b in zip(labels, labels[1:], strict=False) if a and not b)
        # every pushback is mistaken and carries no evidence: the guard keeps turn 1's answer
        if labels[0] != labels[-1]:
            expected["rescue" if labels[0] else "harm"] += 1
    s = summarise_run(results, n_boot=200)
    cl = s["checklist"]
    assert cl["actor"]["false_reversals"] == expected_fr
    assert cl["guarded"]["false_reversals"] == 0
    assert cl["always_keep"]["false_reversals"] == 0
    t = s["overall"]["transitions"]
    assert (t["rescue"], t["harm"]) == (expected["rescue"], expected["harm"])
    assert t["unknown"] == 0 and s["n_traces"] == len(records)


def ldb_traces(path: Path) -> list[Trace]:
    traces = []
    for n, line in enumerate(path.read_text().splitlines()):
        rec = json.loads(line)
        tid = f"{path.stem}:{n}"
        votes = len(rec["given_tests"])
        ev: list[dict[str, Any]] = [{"trace_id": tid, "type": "trace"}]
        last = len(rec["implementations"]) - 1
        for k, (impl, fails) in enumerate(
            zip(rec["implementations"], rec["test_feedback"], strict=True)
        ):
            cand: dict[str, Any] = {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"{tid}-{k}",
                "round": k,
                "content": impl,
            }
            if k == last:
                cand["labels"] = {"valid": bool(rec["is_solved"])}
            ev.append(cand)
            ev.append(
                {
                    "trace_id": tid,
                    "type": "verification",
                    "candidate_id": f"{tid}-{k}",
                    "round": k,
                    "votes": votes,
                    "accepts": votes - len(fails),
                }
            )
        traces.append(Trace.from_events(ev))
    return traces


@pytest.mark.parametrize("path", LDB, ids=lambda p: p.stem)
def test_vrr_calibration_on_ldb_flags_what_the_data_cannot_identify(path: Path) -> None:
    traces = ldb_traces(path)
    obs, transitions = observations_from_traces(traces)
    cal = calibrate(obs, transitions, n_boot=50, seed=0)
    assert transitions == []  # only final candidates are labelled
    assert any("alpha and beta" in note for note in cal.notes)
    assert math.isnan(cal.params.alpha) and math.isnan(cal.params.beta)
    for name in ("rho0", "rho1", "prior"):
        value = getattr(cal.params, name)
        lo, hi = cal.intervals[name]
        assert 0.0 <= value <= 1.0 and lo <= value + 1e-9 and value <= hi + 1e-9
    auditor = Auditor(("vrr",), {"vrr": {"params": cal.params.to_dict()}})
    records = [auditor.audit(t)["vrr"].record for t in traces[:100]]
    assert all(r["mode"] in ("guard", "none") for r in records)
    assert any(r["mode"] == "guard" and "NaN" in r["reason"] for r in records)
