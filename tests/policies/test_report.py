from __future__ import annotations

import json

import pytest
from scipy import stats as sps

from policies import Auditor
from policies.stats.report import summarise_run
from policies.vrr.rule import Round, VrrParams
from policies.vrr.sim import SimLoop, loop_events, simulate_loops
from tests.builders.events import lock_unlock_trace, pushback_trace


def test_summarise_twincheck_run_from_stored_dicts() -> None:
    auditor = Auditor(("twincheck",))
    results = [auditor.audit(lock_unlock_trace(success=False))["twincheck"].to_dict()]
    results += [
        auditor.audit(lock_unlock_trace("Please unlock acc_1", success=True))["twincheck"].to_dict()
    ]
    s = summarise_run(json.loads(json.dumps(results)), ["a", "b"])
    assert s["policy"] == "twincheck" and s["n_traces"] == 2
    assert s["applied"] == 1 and s["accepted"] == 1 and s["trigger_rate"] == 0.5
    assert s["overall"]["transitions"] == {
        "rescue": 0,
        "harm": 0,
        "same": 1,
        "unknown": 1,
        "not_applicable": 0,
    }
    assert s["overall"]["n_unknown"] == 1 and s["overall"]["ci_kind"] == "with_unknowns"
    assert s["annotation_queue"] == [
        {
            "trace": 0,
            "reason": "guarded outcome unknown (truncated continuation)",
            "needs": "guarded outcome",
        }
    ]
    tc = s["twincheck"]
    assert tc["roc_auc"] == 1.0 and tc["average_precision"] == 1.0  # gate ranks the failure first
    assert set(s["per_category"]) == {"a", "b"}
    json.dumps(s, allow_nan=False)


def test_summarise_checklist_run_and_dominance() -> None:
    auditor = Auditor(("checklist",))
    patterns = [[1, 0, 0], [1, 1, 1], [0, 0, 1], [1, 0, 1], [0, 0, 0]] * 4
    results = [
        auditor.audit(pushback_trace(p, f"p{i}", confidence=0.9))["checklist"]
        for i, p in enumerate(patterns)
    ]
    results += [auditor.audit(pushback_trace([1, 0], "bare"))["checklist"]]  # no confidences
    s = summarise_run(results, ["x"] * len(results), n_boot=200)
    assert s["not_applicable"] == {"no per-claim confidence": 1} and s["applied"] == 20
    cl = s["checklist"]
    assert cl["applicable_events"] == 40 and cl["not_applicable_events"] == {
        "no per-claim confidence": 1
    }
    assert cl["actor"]["false_reversals"] == 8 and cl["guarded"]["false_reversals"] == 0
    assert cl["actor_all_events"]["false_reversals"] == 9  # + the bare trace's reversal
    # every pushback is mistaken: no valid feedback, so SC is undefined and nothing dominates
    assert cl["guarded_dominates_actor"] is False
    assert cl["divergences"] == {"ask": 12}
    o = s["overall"]
    assert o["n_not_applicable"] == 1 and o["transitions"]["not_applicable"] == 1
    rescues, harms = o["transitions"]["rescue"], o["transitions"]["harm"]
    assert (rescues, harms) == (4, 4)
    assert o["mcnemar_p"] == pytest.approx(sps.binomtest(rescues, rescues + harms).pvalue)
    assert o["ci"][0] <= o["delta"] <= o["ci"][1] and o["n_unknown"] == 0
    assert o["actor_counts"] == {"successes": 12, "known": 20, "n": 20, "rate": 0.6}


def test_a_run_with_hidden_harms_among_unknowns_never_shows_a_zero_ci() -> None:
    """The guard shipped unlabelled earlier rounds on some loops (hidden harms
    possibly), every known pair is "same": Δ over known pairs is 0 with CI [0, 0]."""
    repaired = SimLoop((Round(0, 0, 1, valid=False), Round(1, 1, 1, valid=True)))
    # round 0 wrongly passes the visible test, so the guard keeps it over the (valid) repair:
    # a harm, hidden because only the final round is labelled
    damaged = SimLoop((Round(0, 1, 1, valid=False), Round(1, 1, 1, valid=True)))
    loops = [repaired] * 30 + [damaged] * 6
    auditor = Auditor(("vrr",), {"vrr": {"mode": "guard"}})
    results = [auditor.audit(loop_events(lp, f"h{i}"))["vrr"] for i, lp in enumerate(loops)]
    rows = [r.to_dict() for r in results]
    for i, r in enumerate(rows):  # stored rows, as the app aggregates them
        r["trace_id"] = f"h{i}"
    s = summarise_run(rows, n_boot=300)
    o = s["overall"]
    assert o["transitions"]["unknown"] > 0 and o["transitions"]["same"] > 0
    assert o["transitions"]["rescue"] == o["transitions"]["harm"] == 0
    assert o["delta_known"] == 0.0 and o["ci_known"] is None and o["ci_known_degenerate"]
    assert o["n_unknown"] == o["transitions"]["unknown"]
    assert o["bounds"][0] < 0.0 and o["ci"][0] < 0.0 and o["ci_kind"] == "with_unknowns"
    assert len(s["annotation_queue"]) == o["n_unknown"] == 6
    assert s["annotation_queue"][0]["trace"] == "h30"
    assert s["vrr"]["guard"] == {"k": 30, "known": 30, "of": 36, "rate": 1.0}

    def intervals(x: object, path: str = "") -> list[tuple[str, list[float]]]:
        if isinstance(x, dict):
            return [i for k, v in x.items() for i in intervals(v, f"{path}.{k}")]
        if isinstance(x, list) and len(x) == 2 and all(isinstance(v, float) for v in x):
            return [(path, x)]
        if isinstance(x, list):
            return [i for v in x for i in intervals(v, path)]
        return []

    shown = intervals(json.loads(json.dumps(s)))
    assert shown and not [p for p, (lo, hi) in shown if lo == hi == 0.0]


def test_summarise_vrr_run_reports_fixed_k_validity() -> None:
    params = VrrParams(0.1, 0.1, 0.05, 0.4, 0.7)
    loops = simulate_loops(params, 200, n_rounds=5, seed=4)
    auditor = Auditor(("vrr",), {"vrr": {"params": params.to_dict()}})
    results = [
        auditor.audit(loop_events(lp, f"v{i}", label_all=True))["vrr"] for i, lp in enumerate(loops)
    ]
    s = summarise_run(results, n_boot=200)["vrr"]
    assert s["loops"] == 200 and s["modes"]["stop"] == 200
    fixed = {k: v["capped"]["rate"] for k, v in s["fixed_k_validity"].items()}
    assert fixed["5"] < 0.3 < fixed["0"]
    assert s["fixed_k_validity"]["3"]["reaching"]["known"] == 200
    assert s["headline"]["rate"] > fixed["5"] + 0.3
    assert s["stop"]["rate"] == s["headline"]["rate"] and s["guard"]["of"] == 200
    assert s["label_sources"] == {"recorded": 1200}


def test_summarise_commit_run() -> None:
    auditor = Auditor(("commit",), {"commit": {"recorded_recheck": "any_challenge"}})
    results = [auditor.audit(pushback_trace([1, 0, 1, 0, 1], "c"))["commit"]]
    summary = summarise_run(results)
    s = summary["commit"]
    assert s["mean_actor_calls"] == 5 and s["mean_commit_calls"] == 3
    assert s["period_two"] == {"k": 1, "known": 1, "of": 1, "rate": 1.0}
    assert s["commit_correct"] == {"k": 0, "known": 0, "of": 1, "rate": None}
    assert s["recheck_sources"] == {"recorded_any": 1}
    assert summary["annotation_queue"][0]["reason"].startswith("the 'pick one, final' call")


def test_summarise_rejects_mixed_policies_and_bad_categories() -> None:
    out = Auditor(("commit", "vrr")).audit(pushback_trace([1, 0]))
    with pytest.raises(ValueError):
        summarise_run(list(out.values()))
    with pytest.raises(ValueError):
        summarise_run([out["commit"]], ["a", "b"])
    assert summarise_run([])["n_traces"] == 0


def test_no_known_pair_has_no_mcnemar_test_and_holm_counts_only_tested_categories():
    """A policy with no known pair (all not applicable or unknown) has no McNemar p, never 1.0;
    Holm adjusts over the categories that have a test."""
    from policies.stats.report import PolicyFold

    fold = PolicyFold("twincheck")
    rows = [
        # category a: two known pairs, one rescue
        ({"transition": "rescue", "actor_success": False, "guarded_success": True}, "a"),
        ({"transition": "same", "actor_success": True, "guarded_success": True}, "a"),
        # category b: nothing known
        ({"transition": "unknown", "actor_success": True, "guarded_success": None}, "b"),
    ]
    for i, (row, category) in enumerate(rows):
        fold.add({"trace_id": i, "applied": True, "continuation": "exact", "record": {},
                  **row}, category)  # fmt: skip
    out = fold.result(n_boot=50)
    assert out["per_category"]["b"]["mcnemar_p"] is None
    assert out["per_category"]["b"]["mcnemar_p_holm"] is None
    # one test among the categories: Holm leaves its p as it is
    assert out["per_category"]["a"]["mcnemar_p_holm"] == out["per_category"]["a"]["mcnemar_p"]
    empty = PolicyFold("twincheck")
    row = {"trace_id": 0, "applied": False, "continuation": "exact", "record": {}}
    empty.add({**row, "transition": "unknown", "actor_success": None, "guarded_success": None}, "")
    assert empty.result(n_boot=50)["overall"]["mcnemar_p"] is None
