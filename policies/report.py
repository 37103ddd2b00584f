"""Run-level reports: aggregate one policy's per-trace results (SPEC §5.1 "Report, per run",
§5.2 metrics, §5.3 report, §5.4 report, §5.5).

Takes `PolicyResult`s or their stored ``to_dict()`` form (or the app's rows: ``applied``,
``actor_success``, ``guarded_success``, ``transition``, ``continuation``, ``record`` and
optionally ``trace_id``), so the app can aggregate straight from its JSONField. Output is
strict-JSON plain data.

Honest by construction (issue 13 §4): traces where the policy is *not applicable* are counted
by reason and left out of Δ (never "same"); every Δ carries ``n_unknown``, the bounds and an
interval that is never degenerate while unknowns exist (`policies.delta`); success counts are
known successes of known n; unknown outcomes are listed for the annotation queue.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from .audit import PolicyResult
from .delta import Pair, delta_report, success_counts
from .jsonsafe import json_safe
from .paper_tables import PAPER_TABLES
from .stats import holm, mcnemar_exact
from .transitions import TRANSITIONS

ResultLike = PolicyResult | Mapping[str, Any]


def _plain(r: ResultLike) -> Mapping[str, Any]:
    return r.to_dict() if isinstance(r, PolicyResult) else r


def na_reason(row: Mapping[str, Any]) -> str | None:
    """The not-applicable reason of a result row (its field, else its record's)."""
    if row.get("transition") != "not_applicable" and not row.get("not_applicable"):
        return None
    rec = row.get("record") or {}
    return str(row.get("not_applicable") or rec.get("not_applicable") or "not applicable")


def effect(
    rows: Sequence[Mapping[str, Any]],
    cats: Sequence[str],
    *,
    n_boot: int,
    seed: int,
    level: float,
) -> dict[str, Any]:
    """Transitions, success counts, Δ (`policies.delta`) and McNemar over ``rows``; rows where
    the policy is not applicable are counted and left out of everything else."""
    counts = Counter(str(r.get("transition")) for r in rows)
    transitions = {t: counts.get(t, 0) for t in TRANSITIONS}
    keep = [i for i, r in enumerate(rows) if na_reason(r) is None]
    app = [rows[i] for i in keep]
    pairs = [
        Pair(r.get("actor_success"), r.get("guarded_success"), r.get("continuation") == "exact")
        for r in app
    ]
    d = delta_report(pairs, [cats[i] for i in keep], n_boot=n_boot, level=level, seed=seed)
    actor = success_counts([r.get("actor_success") for r in app])
    guarded = success_counts([r.get("guarded_success") for r in app])
    return {
        "n": len(rows),
        "n_applicable": len(app),
        "n_not_applicable": len(rows) - len(app),
        "n_known": d["n_known"],
        "n_unknown": d["n_unknown"],
        "n_paired": d["n_known"],
        "transitions": transitions,
        "actor_counts": actor,
        "guarded_counts": guarded,
        "actor_success": actor["rate"],
        "guarded_success": guarded["rate"],
        "delta": d["delta_known"],
        "delta_known": d["delta_known"],
        "ci_known": d["ci_known"],
        "ci_known_degenerate": d["ci_known_degenerate"],
        "bounds": d["bounds"],
        "ci": d["ci"],
        "ci_kind": d["ci_kind"],
        "level": level,
        "excludes_zero": d["excludes_zero"],
        "mcnemar_p": mcnemar_exact(transitions["rescue"], transitions["harm"]),
    }


def annotation_queue(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Results whose outcome is unknown, with why: the items the annotation queue needs."""
    out = []
    for i, r in enumerate(rows):
        if r.get("transition") != "unknown":
            continue
        rec = r.get("record") or {}
        out.append(
            {
                "trace": r.get("trace_id", i),
                "reason": r.get("unknown_reason") or rec.get("unknown_reason") or "unknown",
                "needs": "actor outcome" if r.get("actor_success") is None else "guarded outcome",
            }
        )
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
    replacements, not-applicable counts by reason, the overall and per-category `effect` (with
    Holm-adjusted McNemar p-values per category), the annotation queue and the policy's paper
    table (under the policy's name)."""
    rows = [_plain(r) for r in results]
    cats = list(categories) if categories is not None else [""] * len(rows)
    if len(cats) != len(rows):
        raise ValueError("one category per result")
    policies = {r.get("policy") for r in rows}
    if len(policies) > 1:
        raise ValueError(f"summarise one policy at a time, got {sorted(map(str, policies))}")
    policy = next(iter(policies), None)
    n = len(rows)
    applied = sum(1 for r in rows if r.get("applied"))
    na = Counter(reason for r in rows if (reason := na_reason(r)) is not None)
    continuations = Counter(str(r.get("continuation")) for r in rows)
    kw: dict[str, Any] = {"n_boot": n_boot, "seed": seed, "level": level}
    summary: dict[str, Any] = {
        "policy": policy,
        "n_traces": n,
        "applied": applied,
        "trigger_rate": applied / n if n else None,
        "not_applicable": dict(sorted(na.items())),
        "accepted": sum(1 for r in rows if r.get("continuation") not in (None, "exact")),
        "continuations": dict(sorted(continuations.items())),
        "settings": (rows[0].get("record") or {}).get("settings") if rows else None,
        "overall": effect(rows, cats, **kw),
    }
    by_cat: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(cats):
        by_cat[c].append(i)
    table = {
        c: effect([rows[i] for i in idx], [c] * len(idx), **kw) for c, idx in sorted(by_cat.items())
    }
    adjusted = holm([t["mcnemar_p"] for t in table.values()])
    for t, p in zip(table.values(), adjusted, strict=True):
        t["mcnemar_p_holm"] = p
    summary["per_category"] = table
    summary["annotation_queue"] = annotation_queue(rows)
    paper = PAPER_TABLES.get(str(policy))
    if paper is not None:
        summary[str(policy)] = paper(rows)
    out: dict[str, Any] = json_safe(summary)
    return out
