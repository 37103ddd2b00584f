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
  unknown pairs with the Δ bounds if every unknown were a harm or a rescue. Over the traces
  where TwinCheck is applicable, as the run's statistics are: a trace it is not applicable to
  (no tool calls) is counted apart (``n_not_applicable``), never a "same" pair, so Table 1's
  rates and the statistics' paired rates are over one set;
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

from ..jsonsafe import json_safe
from ..result import PolicyResult
from ..transitions import transition
from .methods import counted_paired_bootstrap_ci, mcnemar_exact
from .paper_tables import GateScores

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


class CertificateCounts:
    """Per certificate (and ``all``): the columns of `COUNTS`."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)

    def add(self, row: Mapping[str, Any]) -> None:
        for d in (row.get("record") or {}).get("decisions", []):
            name = str((d.get("certificate") or {}).get("name", "?"))
            c = self.counts[name]
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
                c[transition(row.get("actor_success"), row.get("guarded_success"))] += 1

    def result(self) -> dict[str, dict[str, int]]:
        out = self.counts
        table = {k: {col: c[col] for col in COUNTS} for k, c in sorted(out.items())}
        table["all"] = {col: sum(c[col] for c in out.values()) for col in COUNTS}
        return table


def certificate_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per certificate (and ``all``): the columns of `COUNTS`."""
    counts = CertificateCounts()
    for r in rows:
        counts.add(r)
    return counts.result()


def _not_applicable(row: Mapping[str, Any]) -> bool:
    """Whether the result is one the policy is not applicable to: by its transition or its own
    field, as the run's statistics read it (`policies.stats.report.na_reason`)."""
    return row.get("transition") == "not_applicable" or bool(row.get("not_applicable"))


def _accepted(row: Mapping[str, Any]) -> bool:
    return row.get("continuation") not in (None, "exact")


class GateRanking:
    """Fig. 2: how the gate score ranks actor failures, and the frozen gate's selectivity."""

    def __init__(self) -> None:
        self.scores = GateScores()
        self.selected: Counter[object] = Counter()

    def add(self, row: Mapping[str, Any]) -> None:
        self.scores.add(row)
        if _accepted(row):
            a = row.get("actor_success")
            self.selected[a if a is None or isinstance(a, bool) else "other"] += 1

    def result(self) -> dict[str, Any]:
        return {
            "n": self.scores.n,
            **self.scores.result(),
            "selected_failures": self.selected[False],
            "selected_successes": self.selected[True],
            "selected_unknown_actor": self.selected[None],
        }


# One result's outcomes as a code: actor and guarded success, each False, True or None.
_OUTCOMES: tuple[bool | None, ...] = (False, True, None)


def _outcome_code(row: Mapping[str, Any]) -> int:
    a, g = row.get("actor_success"), row.get("guarded_success")
    return (2 if a is None else int(bool(a))) + 3 * (2 if g is None else int(bool(g)))


def _by_category(codes: Sequence[int], cats: Sequence[str]) -> dict[str, Counter[int]]:
    out: dict[str, Counter[int]] = defaultdict(Counter)
    for code, c in zip(codes, cats, strict=True):
        out[c][code] += 1
    return out


def success_table(
    rows: Sequence[Mapping[str, Any]], cats: Sequence[str], n_boot: int, seed: int
) -> dict[str, Any]:
    """Table 1's row for one method (`outcome_table` of the rows' outcomes)."""
    return outcome_table(_by_category([_outcome_code(r) for r in rows], cats), n_boot, seed)


def outcome_table(codes: Mapping[str, Mapping[int, int]], n_boot: int, seed: int) -> dict[str, Any]:
    """Table 1's row for one method, from how many of its results have each `_outcome_code`,
    per category: success rates over known pairs, Δ (percentage points) with a
    category-stratified paired-bootstrap 95% CI, rescue/harm with McNemar's exact p, and the
    unknowns with the Δ bounds they allow."""
    counts: Counter[str] = Counter()
    diffs: dict[str, Counter[int]] = {}
    n_known = actor = guarded = 0
    for cat, counted in codes.items():
        for code, k in counted.items():
            a, g = _OUTCOMES[code % 3], _OUTCOMES[code // 3]
            counts[transition(a, g)] += k
            if a is not None and g is not None and k:
                diffs.setdefault(cat, Counter())[int(g) - int(a)] += k
                n_known += k
                actor += int(a) * k
                guarded += int(g) * k
    n = sum(sum(c.values()) for c in codes.values())
    out: dict[str, Any] = {
        "n": n,
        "n_known": n_known,
        "rescue": counts["rescue"],
        "harm": counts["harm"],
        "unknown": counts["unknown"],
        "mcnemar_p": mcnemar_exact(counts["rescue"], counts["harm"]) if n_known else None,
        # the counts behind the percentages: both over the n_known pairs whose two outcomes
        # are known, the set of the statistics' ``paired`` rates
        "actor_k": actor,
        "guarded_k": guarded,
        "actor_pct": None,
        "guarded_pct": None,
        "delta_pp": None,
        "ci_pp": None,
    }
    if n_known:
        ci = counted_paired_bootstrap_ci(diffs, n_boot=n_boot, seed=seed)
        out.update(
            # sums of 0.0 and 1.0, exact: the integer counts as floats
            actor_pct=100 * float(actor) / n_known,
            guarded_pct=100 * float(guarded) / n_known,
            delta_pp=100 * ci.estimate,
            ci_pp=[100 * ci.low, 100 * ci.high],
        )
    if n and counts["unknown"]:
        base = counts["rescue"] - counts["harm"]
        out["delta_bounds_pp"] = [
            100 * (base - counts["unknown"]) / n,
            100 * (base + counts["unknown"]) / n,
        ]
    return out


class TwincheckReport:
    """`twincheck_report` as a fold: `add` one result row (and its category) at a time, in the
    run's order, then `result`. Keeps counts (per category, how many results have each pair
    of outcomes: all the bootstrap resamples) and each known actor outcome's gate score —
    never the rows."""

    def __init__(self) -> None:
        self.certificates = CertificateCounts()
        self.gate = GateRanking()
        # per category: how many results have each `_outcome_code`
        self.codes: dict[str, Counter[int]] = defaultdict(Counter)
        # per category: results where TwinCheck is not applicable, apart from the tables' pairs
        self.not_applicable: Counter[str] = Counter()
        self.n = 0
        self.accepted = 0
        self.rejections: Counter[str] = Counter()
        self.modes: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()
        self.awaiting_review = 0

    def add(self, row: Mapping[str, Any], category: str = "") -> None:
        rec = row.get("record") or {}
        self.certificates.add(row)
        self.gate.add(row)
        if _not_applicable(row):
            self.not_applicable[category] += 1
        else:
            self.codes[category][_outcome_code(row)] += 1
        self.n += 1
        for d in rec.get("decisions", []):
            gate = d.get("gate") or {}
            if not gate.get("replace"):
                self.rejections[_reason_key(str(gate.get("reason", "")))] += 1
        if _accepted(row):
            self.accepted += 1
            self.modes[str(row.get("continuation"))] += 1
            self.reasons[_reason_key(str(rec.get("continuation_reason", "")))] += 1
        self.awaiting_review += len(rec.get("awaiting_review", []))

    def control_row(self, n_boot: int, seed: int) -> dict[str, Any]:
        """Table 3's row for this run's results."""
        row = outcome_table(self.codes, n_boot, seed)
        row["accepted"] = self.accepted
        row["n_not_applicable"] = self.not_applicable.total()
        return row

    def result(
        self, controls: Mapping[str, TwincheckReport] | None = None, *, n_boot: int, seed: int
    ) -> dict[str, Any]:
        """The report; ``controls``: other methods' folds over the same traces."""
        table3: dict[str, Any] = {"TwinCheck (this run)": self.control_row(n_boot, seed)}
        for name, other in (controls or {}).items():
            table3[name] = other.control_row(n_boot, seed)
        table1 = outcome_table(self.codes, n_boot, seed)
        table1["n_not_applicable"] = self.not_applicable.total()
        table2 = {}
        for c in sorted(self.codes.keys() | self.not_applicable.keys()):
            table2[c] = outcome_table({c: self.codes.get(c, Counter())}, n_boot, seed)
            table2[c]["n_not_applicable"] = self.not_applicable[c]
        report = {
            "n_traces": self.n,
            "per_certificate": self.certificates.result(),
            "gate": self.gate.result(),
            "table1": table1,
            "table2": table2,
            "table3": {"rows": table3, "not_computed": dict(NOT_COMPUTED)},
            "rejections": dict(self.rejections.most_common()),
            "continuations": {"modes": dict(self.modes), "reasons": dict(self.reasons)},
            "awaiting_review": self.awaiting_review,
        }
        out: dict[str, Any] = json_safe(report)
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
    folds: dict[str, TwincheckReport] = {}
    for name, other in (controls or {}).items():
        other_rows = [_plain(r) for r in other]
        if len(other_rows) != len(rows):
            raise ValueError(f"control {name!r} has {len(other_rows)} results for {len(rows)}")
        folds[name] = TwincheckReport()
        for r, c in zip(other_rows, cats, strict=True):
            folds[name].add(r, c)
    report = TwincheckReport()
    for r, c in zip(rows, cats, strict=True):
        report.add(r, c)
    return report.result(folds, n_boot=n_boot, seed=seed)
