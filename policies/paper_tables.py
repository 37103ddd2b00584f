"""Each policy's own table, in the shape of its paper (issue 13 §5), from per-trace records.

Pure functions of the stored result rows (`policies.report` calls them). Every rate is given
with what it counts — ``{"k", "known", "of", "rate"}``: k of the known cases, out of all cases
it could have counted — so an unknown never silently shrinks a denominator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .checklist_metrics import dominates, feedback_rates
from .stats import average_precision, roc_auc

Rows = Sequence[Mapping[str, Any]]


def rate(values: Sequence[bool | None]) -> dict[str, Any]:
    known = [v for v in values if v is not None]
    k = sum(1 for v in known if v)
    return {
        "k": k,
        "known": len(known),
        "of": len(values),
        "rate": k / len(known) if known else None,
    }


def _records(rows: Rows) -> list[Mapping[str, Any]]:
    return [r.get("record") or {} for r in rows]


def twincheck_table(rows: Rows) -> dict[str, Any]:
    """How well the gate ranks actor failures (TwinCheck Fig. 2): ROC-AUC and AP of the gate
    score against actor failure, over traces with a known actor outcome."""
    known = [r for r in rows if r.get("actor_success") is not None]
    scores = [float((r.get("record") or {}).get("gate_score", 0.0)) for r in known]
    failures = [not r["actor_success"] for r in known]
    recs = _records(rows)
    return {
        "tool_calls": sum(rec.get("tool_calls", 0) for rec in recs),
        "triggers": sum(rec.get("triggers", 0) for rec in recs),
        "accepted": sum(rec.get("accepted", 0) for rec in recs),
        "failure_prevalence": sum(failures) / len(failures) if failures else None,
        "roc_auc": roc_auc(scores, failures),
        "average_precision": average_precision(scores, failures),
    }


def checklist_table(rows: Rows) -> dict[str, Any]:
    """Thinking-in-Bets Tables 2–3: false-reversal and successful-correction rates for the
    actor, the guarded counterfactual and always-keep, over the feedback events the rule could
    judge (``applicable``); the actor's rates over every labelled event beside them; dominance
    (App. C); outcome classes; divergences; flags."""
    events = [e for rec in _records(rows) for e in rec.get("feedback_events", [])]
    applicable = [e for e in events if not e.get("not_applicable")]
    actor, guarded, keep = (feedback_rates(applicable, w) for w in ("actor", "guarded", "keep"))
    classes: dict[str, Counter[str]] = {"actor": Counter(), "guarded": Counter()}
    for e in events:
        classes["actor"][str(e.get("actor_class"))] += 1
        classes["guarded"][str(e.get("guarded_class"))] += 1
    flags: Counter[str] = Counter()
    divergences: Counter[str] = Counter()
    for rec in _records(rows):
        for f in rec.get("flags", []):
            flags[str(f.get("flag"))] += 1
        div = rec.get("divergence")
        if div:
            divergences[str(div.get("action"))] += 1
    return {
        "feedback_events": len(events),
        "applicable_events": len(applicable),
        "not_applicable_events": dict(
            Counter(str(e["not_applicable"]) for e in events if e.get("not_applicable"))
        ),
        "actor_all_events": feedback_rates(events, "actor").to_dict(),
        "actor": actor.to_dict(),
        "guarded": guarded.to_dict(),
        "always_keep": keep.to_dict(),
        "guarded_dominates_actor": dominates(guarded, actor),
        "guarded_dominates_always_keep": dominates(guarded, keep),
        "classes": {k: dict(v) for k, v in classes.items()},
        "divergences": dict(divergences),
        "flags": dict(flags),
    }


def _validity(rec: Mapping[str, Any], k: Any) -> bool | None:
    tv = rec.get("true_validity") or []
    if not isinstance(k, int) or not 0 <= k < len(tv):
        return None
    v = tv[k]
    return None if v is None else bool(v)


def vrr_table(rows: Rows) -> dict[str, Any]:
    """VRR Tables 1–3: final true validity of fixed-k repair for every k, of VRR-Stop, of
    VRR-Guard, of the actor and of the headline rule; rounds saved. Fixed-k ships round
    min(k, last) — a recorded loop cannot be repaired past its end, so a loop the actor stopped
    earlier keeps its last round; ``reaching`` counts only loops with a round k. Validity is
    the round's label (recorded, human or executed), unknown otherwise."""
    recs = [rec for rec in _records(rows) if rec.get("n_rounds")]
    k_max = max((int(rec["n_rounds"]) for rec in recs), default=0)
    fixed: dict[str, Any] = {}
    for k in range(k_max):
        fixed[str(k)] = {
            "capped": rate([_validity(rec, min(k, int(rec["n_rounds"]) - 1)) for rec in recs]),
            "reaching": rate([_validity(rec, k) for rec in recs if int(rec["n_rounds"]) > k]),
        }
    alts = [rec.get("alternatives") or {} for rec in recs]
    stop_status = Counter(str(a.get("stop_status")) for a in alts)
    headline = [rec for rec in recs if not rec.get("not_applicable")]
    saved = [int(rec.get("rounds_saved") or 0) for rec in headline]
    return {
        "loops": len(recs),
        "modes": dict(Counter(str(rec.get("mode")) for rec in recs)),
        "not_applicable": dict(
            Counter(str(rec["not_applicable"]) for rec in recs if rec.get("not_applicable"))
        ),
        "fixed_k_validity": fixed,
        "actor": rate([_validity(rec, int(rec["n_rounds"]) - 1) for rec in recs]),
        "stop": rate(
            [
                _validity(rec, a.get("stop"))
                for rec, a in zip(recs, alts, strict=True)
                if isinstance(a.get("stop"), int)
            ]
        ),
        "stop_status": dict(stop_status),
        "guard": rate(
            [
                _validity(rec, a.get("guard"))
                for rec, a in zip(recs, alts, strict=True)
                if isinstance(a.get("guard"), int)
            ]
        ),
        "headline": rate([_validity(rec, rec.get("shipped_round")) for rec in headline]),
        "mean_rounds_saved": sum(saved) / len(saved) if saved else None,
        "label_sources": dict(
            Counter(str(s) for rec in recs for s in rec.get("label_sources") or [] if s)
        ),
    }


def commit_table(rows: Rows) -> dict[str, Any]:
    """The confidence-collapse comparison: calls spent, flips, period-2 oscillation, parity
    dependence of the shipped answer, and correctness of the actor's answer vs the commit
    rule's (known of n; the rule's answer is unknown where its call was not made)."""
    recs = [rec for rec in _records(rows) if rec.get("applied")]
    m = len(recs)

    def mean(key: str) -> float | None:
        vals = [float(rec[key]) for rec in recs if isinstance(rec.get(key), (int, float))]
        return sum(vals) / len(vals) if vals else None

    return {
        "applied": m,
        "mean_actor_calls": mean("actor_calls"),
        "mean_commit_calls": mean("commit_calls"),
        "mean_flips": mean("flips"),
        "period_two": rate([rec.get("period_two_oscillation") for rec in recs]),
        "parity_dependent": rate([rec.get("parity_dependent") for rec in recs]),
        "actor_correct": rate([rec.get("actor_correct") for rec in recs]),
        "commit_correct": rate([rec.get("commit_correct") for rec in recs]),
        "recheck_sources": dict(Counter(str(rec.get("recheck_source")) for rec in recs)),
        "unknown_reasons": dict(
            Counter(str(rec["unknown_reason"]) for rec in recs if rec.get("unknown_reason"))
        ),
    }


PAPER_TABLES: dict[str, Callable[[Rows], dict[str, Any]]] = {
    "twincheck": twincheck_table,
    "checklist": checklist_table,
    "vrr": vrr_table,
    "commit": commit_table,
}
