"""Run-level reports: aggregate one policy's per-trace results (SPEC §5.1 "Report, per run",
§5.2 metrics, §5.3 report, §5.4 report, §5.5).

Takes `PolicyResult`s or their stored ``to_dict()`` form, so the app can aggregate straight
from its JSONField. Output is strict-JSON plain data.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from .audit import PolicyResult
from .checklist_metrics import dominates, feedback_rates
from .jsonsafe import json_safe
from .stats import average_precision, holm, mcnemar_exact, paired_bootstrap_ci, roc_auc
from .transitions import transition_counts

ResultLike = PolicyResult | Mapping[str, Any]


def _plain(r: ResultLike) -> Mapping[str, Any]:
    return r.to_dict() if isinstance(r, PolicyResult) else r


def _effect(
    rows: Sequence[Mapping[str, Any]],
    cats: Sequence[str],
    n_boot: int,
    seed: int,
    level: float,
) -> dict[str, Any]:
    pairs = [
        (float(r["actor_success"]), float(r["guarded_success"]), c)
        for r, c in zip(rows, cats, strict=True)
        if r.get("actor_success") is not None and r.get("guarded_success") is not None
    ]
    counts = transition_counts((r.get("actor_success"), r.get("guarded_success")) for r in rows)
    out: dict[str, Any] = {"n": len(rows), "n_paired": len(pairs), "transitions": counts}
    if pairs:
        a, g, c = zip(*pairs, strict=True)
        ci = paired_bootstrap_ci(a, g, c, n_boot=n_boot, level=level, seed=seed)
        out.update(
            actor_success=sum(a) / len(a),
            guarded_success=sum(g) / len(g),
            delta=ci.estimate,
            ci=[ci.low, ci.high],
        )
    else:
        out.update(actor_success=None, guarded_success=None, delta=None, ci=None)
    out["mcnemar_p"] = mcnemar_exact(counts["rescue"], counts["harm"])
    return out


def summarise_run(
    results: Sequence[ResultLike],
    categories: Sequence[str] | None = None,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Aggregate one policy's results over a run's traces: trigger rate, accepted
    replacements, actor vs guarded success with Δ and a category-stratified paired-bootstrap
    CI (pairs with an unknown outcome are left out and counted as ``unknown``), rescue/harm
    with the exact McNemar test, a per-category table with Holm-adjusted McNemar p-values,
    and the policy's own metrics."""
    rows = [_plain(r) for r in results]
    cats = list(categories) if categories is not None else [""] * len(rows)
    if len(cats) != len(rows):
        raise ValueError("one category per result")
    policies = {r.get("policy") for r in rows}
    if len(policies) > 1:
        raise ValueError(f"summarise one policy at a time, got {sorted(map(str, policies))}")
    policy = next(iter(policies), None)
    n = len(rows)
    summary: dict[str, Any] = {
        "policy": policy,
        "n_traces": n,
        "applied": sum(1 for r in rows if r.get("applied")),
        "trigger_rate": sum(1 for r in rows if r.get("applied")) / n if n else None,
        "accepted": sum(1 for r in rows if r.get("continuation") not in (None, "exact")),
        "continuations": dict(
            sorted(
                {
                    k: sum(1 for r in rows if r.get("continuation") == k)
                    for k in {str(r.get("continuation")) for r in rows}
                }.items()
            )
        ),
        "settings": rows[0]["record"].get("settings") if rows else None,
        "overall": _effect(rows, cats, n_boot, seed, level),
    }
    by_cat: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(cats):
        by_cat[c].append(i)
    table = {
        c: _effect([rows[i] for i in idx], [c] * len(idx), n_boot, seed, level)
        for c, idx in sorted(by_cat.items())
    }
    adjusted = holm([t["mcnemar_p"] for t in table.values()])
    for t, p in zip(table.values(), adjusted, strict=True):
        t["mcnemar_p_holm"] = p
    summary["per_category"] = table
    extra = {
        "twincheck": _twincheck,
        "checklist": _checklist,
        "vrr": _vrr,
        "commit": _commit,
    }.get(str(policy))
    if extra is not None:
        summary[str(policy)] = extra(rows)
    out: dict[str, Any] = json_safe(summary)
    return out


def _twincheck(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How well the gate ranks actor failures (TwinCheck Fig. 2): ROC-AUC and AP of the gate
    score against actor failure, over traces with a known actor outcome."""
    known = [r for r in rows if r.get("actor_success") is not None]
    scores = [float(r["record"].get("gate_score", 0.0)) for r in known]
    failures = [not r["actor_success"] for r in known]
    return {
        "tool_calls": sum(r["record"].get("tool_calls", 0) for r in rows),
        "triggers": sum(r["record"].get("triggers", 0) for r in rows),
        "accepted": sum(r["record"].get("accepted", 0) for r in rows),
        "failure_prevalence": sum(failures) / len(failures) if failures else None,
        "roc_auc": roc_auc(scores, failures),
        "average_precision": average_precision(scores, failures),
    }


def _checklist(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    events = [e for r in rows for e in r["record"].get("feedback_events", [])]
    actor, guarded, keep = (feedback_rates(events, w) for w in ("actor", "guarded", "keep"))
    classes: dict[str, dict[str, int]] = {"actor": {}, "guarded": {}}
    for e in events:
        for who, key in (("actor", "actor_class"), ("guarded", "guarded_class")):
            classes[who][e[key]] = classes[who].get(e[key], 0) + 1
    flags: dict[str, int] = {}
    for r in rows:
        for f in r["record"].get("flags", []):
            flags[f["flag"]] = flags.get(f["flag"], 0) + 1
    return {
        "feedback_events": len(events),
        "actor": actor.to_dict(),
        "guarded": guarded.to_dict(),
        "always_keep": keep.to_dict(),
        "guarded_dominates_actor": dominates(guarded, actor),
        "classes": classes,
        "flags": flags,
    }


def _vrr(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Final true validity of fixed-k repair, VRR-Stop/Guard and the actor over loops whose
    rounds are all labelled; rounds saved."""
    recs = [r["record"] for r in rows if r["record"].get("n_rounds")]
    full = [
        rec
        for rec in recs
        if rec["true_validity"] and all(v is not None for v in rec["true_validity"])
    ]
    k_max = min((len(rec["true_validity"]) for rec in full), default=0)
    fixed = {
        str(k): sum(bool(rec["true_validity"][k]) for rec in full) / len(full) for k in range(k_max)
    }
    shipped = [bool(rec["true_validity"][rec["shipped_round"]]) for rec in full]
    return {
        "loops": len(recs),
        "fully_labelled": len(full),
        "modes": {m: sum(1 for rec in recs if rec["mode"] == m) for m in ("stop", "guard")},
        "fixed_k_validity": fixed,
        "policy_validity": sum(shipped) / len(shipped) if shipped else None,
        "mean_rounds_saved": (sum(rec["rounds_saved"] for rec in recs) / len(recs))
        if recs
        else None,
    }


def _commit(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    recs = [r["record"] for r in rows if r["record"].get("applied")]
    m = len(recs)

    def rate(key: str) -> float | None:
        vals = [rec[key] for rec in recs if rec.get(key) is not None]
        return sum(bool(v) for v in vals) / len(vals) if vals else None

    return {
        "applied": m,
        "mean_actor_calls": sum(rec["actor_calls"] for rec in recs) / m if m else None,
        "mean_commit_calls": sum(rec["commit_calls"] for rec in recs) / m if m else None,
        "mean_flips": sum(rec["flips"] for rec in recs) / m if m else None,
        "period_two_rate": rate("period_two_oscillation"),
        "parity_dependent_rate": rate("parity_dependent"),
        "actor_correct_rate": rate("actor_correct"),
        "commit_correct_rate": rate("commit_correct"),
    }
