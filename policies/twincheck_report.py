"""TwinCheck reported the way the paper reports it (Dai & Huang 2026, Tables 1–3, Fig. 2):
a pure function of one run's TwinCheck results, for the run page and ``audit --json``.

`twincheck_report(results, categories, controls=None)` returns plain JSON data:

- ``per_certificate``: held, with twin (passed the structural checks), judged (a verdict in
  both orders, no error or abstention), accepted, rescue, harm, same, unknown, awaiting human
  review, abstained — a rescue/harm/unknown is counted for the certificate whose replacement
  was accepted (replay stops there, so there is one per trace at most);
- ``gate`` (Fig. 2): ROC-AUC and average precision of the per-trace gate score against actor
  failure, the failure prevalence, and the frozen gate's selectivity — accepted replacements on
  actor failures vs actor successes;
- ``table1``: actor vs TwinCheck success over tasks whose both outcomes are known, Δ with a
  category-stratified paired-bootstrap CI, rescue/harm, and — never hidden — the number of
  unknown pairs with the Δ bounds if every unknown were a harm or a rescue;
- ``table2``: the same per category;
- ``table3``: trigger-matched controls — the actor, this run, and every control run the caller
  passes (``controls``: name → that method's results on the same traces, in the same order).
  Offline, the one control computable without a model is TwinCheck without the verifier
  (TwinCheck settings ``verify=False``: every held certificate whose twin passes the
  structural checks is accepted). The paper's "selective self-revision" and "selective
  absolute verifier" need the actor model and an absolute verifier: listed in
  ``not_computed``;
- ``rejections``: counts of the gate's reasons for keeping the actor's call, and
  ``continuations``: modes and reasons of accepted replacements ("needs live continuation").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from .audit import PolicyResult
from .jsonsafe import json_safe
from .stats import average_precision, mcnemar_exact, paired_bootstrap_ci, roc_auc
from .transitions import transition

ResultLike = PolicyResult | Mapping[str, Any]
COUNTS = (
    "held",
    "with_twin",
    "judged",
    "accepted",
    "rescue",
    "harm",
    "same",
    "unknown",
    "awaiting_review",
    "abstained",
)
NOT_COMPUTED = {
    "selective self-revision": "needs the actor model to revise its own call at the trigger",
    "selective absolute verifier": "needs a model that scores the actor's call on its own",
}


def _plain(r: ResultLike) -> Mapping[str, Any]:
    return r.to_dict() if isinstance(r, PolicyResult) else r


def _reason_key(reason: str) -> str:
    """A gate reason without its numbers and orientation, for counting."""
    for cut in (" (", ":", " <", " ≥"):
        reason = reason.split(cut)[0]
    return reason


def certificate_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per certificate (and ``all``): the columns of `COUNTS`."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        for d in r.get("record", {}).get("decisions", []):
            name = str((d.get("certificate") or {}).get("name", "?"))
            c = out[name]
            c["held"] += 1
            checks = d.get("checks") or {}
            c["with_twin"] += bool(d.get("twin")) and bool(checks.get("passed"))
            js = d.get("judgments") or []
            c["judged"] += len(js) == 2 and not any(
                j.get("error") or j.get("abstained") for j in js
            )
            gate = d.get("gate") or {}
            c["awaiting_review"] += bool(gate.get("awaiting_review"))
            c["abstained"] += bool(gate.get("abstained")) and not gate.get("awaiting_review")
            if gate.get("replace"):
                c["accepted"] += 1
                c[transition(r.get("actor_success"), r.get("guarded_success"))] += 1
    table = {k: {col: c[col] for col in COUNTS} for k, c in sorted(out.items())}
    table["all"] = {col: sum(c[col] for c in out.values()) for col in COUNTS}
    return table


def gate_ranking(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Fig. 2: how the gate score ranks actor failures, and the frozen gate's selectivity."""
    known = [r for r in rows if r.get("actor_success") is not None]
    scores = [float(r.get("record", {}).get("gate_score", 0.0)) for r in known]
    failures = [not r["actor_success"] for r in known]
    accepted = [r for r in rows if r.get("continuation") not in (None, "exact")]
    return {
        "n": len(known),
        "failure_prevalence": sum(failures) / len(failures) if failures else None,
        "roc_auc": roc_auc(scores, failures),
        "average_precision": average_precision(scores, failures),
        "selected_failures": sum(1 for r in accepted if r.get("actor_success") is False),
        "selected_successes": sum(1 for r in accepted if r.get("actor_success") is True),
        "selected_unknown_actor": sum(1 for r in accepted if r.get("actor_success") is None),
    }


def success_table(
    rows: Sequence[Mapping[str, Any]], cats: Sequence[str], n_boot: int, seed: int
) -> dict[str, Any]:
    """Table 1's row for one method: success rates over known pairs, Δ (percentage points)
    with a category-stratified paired-bootstrap 95% CI, rescue/harm with McNemar's exact p,
    and the unknowns with the Δ bounds they allow."""
    pairs = [
        (float(r["actor_success"]), float(r["guarded_success"]), c)
        for r, c in zip(rows, cats, strict=True)
        if r.get("actor_success") is not None and r.get("guarded_success") is not None
    ]
    counts = Counter(transition(r.get("actor_success"), r.get("guarded_success")) for r in rows)
    out: dict[str, Any] = {
        "n": len(rows),
        "n_known": len(pairs),
        "rescue": counts["rescue"],
        "harm": counts["harm"],
        "unknown": counts["unknown"],
        "mcnemar_p": mcnemar_exact(counts["rescue"], counts["harm"]),
        "actor_pct": None,
        "guarded_pct": None,
        "delta_pp": None,
        "ci_pp": None,
    }
    if pairs:
        a, g, c = zip(*pairs, strict=True)
        ci = paired_bootstrap_ci(a, g, c, n_boot=n_boot, seed=seed)
        out.update(
            actor_pct=100 * sum(a) / len(a),
            guarded_pct=100 * sum(g) / len(g),
            delta_pp=100 * ci.estimate,
            ci_pp=[100 * ci.low, 100 * ci.high],
        )
    n = len(rows)
    if n and counts["unknown"]:
        base = counts["rescue"] - counts["harm"]
        out["delta_bounds_pp"] = [
            100 * (base - counts["unknown"]) / n,
            100 * (base + counts["unknown"]) / n,
        ]
    return out


def twincheck_report(
    results: Sequence[ResultLike],
    categories: Sequence[str] | None = None,
    controls: Mapping[str, Sequence[ResultLike]] | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The report (module docstring). ``categories``: one per result (BFCL category, …);
    ``controls``: other methods' results on the same traces, same order."""
    rows = [_plain(r) for r in results]
    cats = list(categories) if categories is not None else [""] * len(rows)
    if len(cats) != len(rows):
        raise ValueError("one category per result")
    by_cat: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(cats):
        by_cat[c].append(i)
    table3: dict[str, Any] = {"TwinCheck (this run)": _control_row(rows, cats, n_boot, seed)}
    for name, other in (controls or {}).items():
        other_rows = [_plain(r) for r in other]
        if len(other_rows) != len(rows):
            raise ValueError(f"control {name!r} has {len(other_rows)} results for {len(rows)}")
        table3[name] = _control_row(other_rows, cats, n_boot, seed)
    rejections: Counter[str] = Counter()
    modes: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for r in rows:
        for d in r.get("record", {}).get("decisions", []):
            gate = d.get("gate") or {}
            if not gate.get("replace"):
                rejections[_reason_key(str(gate.get("reason", "")))] += 1
        if r.get("continuation") not in (None, "exact"):
            modes[str(r.get("continuation"))] += 1
            reasons[_reason_key(str(r.get("record", {}).get("continuation_reason", "")))] += 1
    report = {
        "n_traces": len(rows),
        "per_certificate": certificate_counts(rows),
        "gate": gate_ranking(rows),
        "table1": success_table(rows, cats, n_boot, seed),
        "table2": {
            c: success_table([rows[i] for i in idx], [c] * len(idx), n_boot, seed)
            for c, idx in sorted(by_cat.items())
        },
        "table3": {"rows": table3, "not_computed": dict(NOT_COMPUTED)},
        "rejections": dict(rejections.most_common()),
        "continuations": {"modes": dict(modes), "reasons": dict(reasons)},
        "awaiting_review": sum(len(r.get("record", {}).get("awaiting_review", [])) for r in rows),
    }
    out: dict[str, Any] = json_safe(report)
    return out


def _control_row(
    rows: Sequence[Mapping[str, Any]], cats: Sequence[str], n_boot: int, seed: int
) -> dict[str, Any]:
    row = success_table(rows, cats, n_boot, seed)
    row["accepted"] = sum(1 for r in rows if r.get("continuation") not in (None, "exact"))
    return row
