from __future__ import annotations

import json

import pytest
from scipy import stats as sps

from policies import Auditor
from policies.report import summarise_run
from policies.vrr import VrrParams
from policies.vrr_sim import loop_events, simulate_loops

from ._build import lock_unlock_trace, pushback_trace


def test_summarise_twincheck_run_from_stored_dicts() -> None:
    auditor = Auditor(("twincheck",))
    results = [auditor.audit(lock_unlock_trace(success=False))["twincheck"].to_dict()]
    results += [
        auditor.audit(lock_unlock_trace("Please unlock acc_1", success=True))["twincheck"].to_dict()
    ]
    s = summarise_run(json.loads(json.dumps(results)), ["a", "b"])
    assert s["policy"] == "twincheck" and s["n_traces"] == 2
    assert s["applied"] == 1 and s["accepted"] == 1 and s["trigger_rate"] == 0.5
    assert s["overall"]["transitions"] == {"rescue": 0, "harm": 0, "same": 1, "unknown": 1}
    tc = s["twincheck"]
    assert tc["roc_auc"] == 1.0 and tc["average_precision"] == 1.0  # gate ranks the failure first
    assert set(s["per_category"]) == {"a", "b"}
    json.dumps(s, allow_nan=False)


def test_summarise_checklist_run_and_dominance() -> None:
    auditor = Auditor(("checklist",), {"checklist": {"implicit_confidence": 0.9}})
    patterns = [[1, 0, 0], [1, 1, 1], [0, 0, 1], [1, 0, 1], [0, 0, 0]] * 4
    results = [
        auditor.audit(pushback_trace(p, f"p{i}"))["checklist"] for i, p in enumerate(patterns)
    ]
    s = summarise_run(results, ["x"] * len(results), n_boot=200)
    cl = s["checklist"]
    assert cl["actor"]["false_reversals"] == 8 and cl["guarded"]["false_reversals"] == 0
    # the kept state also blocks the lucky fix in [0, 0, 1]: no valid feedback, so SC is n/a
    assert cl["guarded_dominates_actor"] is False  # SC undefined without valid feedback
    o = s["overall"]
    rescues, harms = o["transitions"]["rescue"], o["transitions"]["harm"]
    assert (rescues, harms) == (4, 4)
    assert o["mcnemar_p"] == pytest.approx(sps.binomtest(rescues, rescues + harms).pvalue)
    assert o["ci"][0] <= o["delta"] <= o["ci"][1]


def test_summarise_vrr_run_reports_fixed_k_validity() -> None:
    params = VrrParams(0.1, 0.1, 0.05, 0.4, 0.7)
    loops = simulate_loops(params, 200, n_rounds=5, seed=4)
    auditor = Auditor(("vrr",), {"vrr": {"params": params.to_dict()}})
    results = [
        auditor.audit(loop_events(lp, f"v{i}", label_all=True))["vrr"] for i, lp in enumerate(loops)
    ]
    s = summarise_run(results, n_boot=200)["vrr"]
    assert s["fully_labelled"] == 200 and s["modes"]["stop"] == 200
    assert s["fixed_k_validity"]["5"] < 0.3 < s["fixed_k_validity"]["0"]
    assert s["policy_validity"] > s["fixed_k_validity"]["5"] + 0.3


def test_summarise_commit_run() -> None:
    auditor = Auditor(("commit",))
    results = [auditor.audit(pushback_trace([1, 0, 1, 0, 1], "c"))["commit"]]
    s = summarise_run(results)["commit"]
    assert s["mean_actor_calls"] == 5 and s["mean_commit_calls"] == 3
    assert s["period_two_rate"] == 1.0


def test_summarise_rejects_mixed_policies_and_bad_categories() -> None:
    out = Auditor(("commit", "vrr")).audit(pushback_trace([1, 0]))
    with pytest.raises(ValueError):
        summarise_run(list(out.values()))
    with pytest.raises(ValueError):
        summarise_run([out["commit"]], ["a", "b"])
    assert summarise_run([])["n_traces"] == 0
