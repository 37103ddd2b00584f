"""How a policy's Δ and counts are shown: one shaping for the run page, the
comparison, the dashboard, `audit --json` and exports, so no surface can show a number the
others withhold.

Reads the ``overall`` (or per-category) effect that `policies.stats.report.effect` stored in the
run's summary. Rules, all of them consequences of "never hide an unknown":

- the unknowns are shown next to every Δ, with one sentence of what the Δ means;
- Δ over known pairs is labelled as such, beside the bounds (every unknown a harm / a rescue);
- a degenerate interval (low = high, e.g. [0, 0]) is never shown while unknowns exist — not
  even from a summary stored before the policies computed bounds;
- the colour follows whether the headline interval excludes 0, not Δ's sign;
- success counts are "known successes of known n", each over its own known outcomes, but for
  the actor's over all traces (``actor_all``: not-applicable ones included, unknown outcomes
  counted as not successes and shown as unknown), which is the benchmark's own score; the
  rates compared side by side (actor % beside guarded %) are over one set, the pairs whose two
  outcomes are known (``paired``), never each over its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CI_KIND_LABELS = {
    "known_pairs": "CI over known pairs",
    "with_unknowns": "CI covering every unknown (bounds' bootstrap)",
}


def _interval(value: Any) -> list[float] | None:
    if isinstance(value, list | tuple) and len(value) == 2 and None not in value:
        return [float(value[0]), float(value[1])]
    return None


def _counts(c: Any, fallback_rate: Any) -> dict[str, Any]:
    """'k of known n' (the stored success_counts), or only the rate from a summary without them."""
    if isinstance(c, Mapping) and "known" in c:
        return {
            "successes": c.get("successes"),
            "known": c.get("known"),
            "n": c.get("n"),
            "rate": c.get("rate"),
            "text": f"{c.get('successes')} of the {c.get('known')} with a known outcome",
        }
    return {"successes": None, "known": None, "n": None, "rate": fallback_rate, "text": None}


def _all_counts(c: Any) -> dict[str, Any] | None:
    """The actor's successes over all the traces, not-applicable ones included (the benchmark's
    own score: "260 of 600"), with how many of them have no recorded outcome; None from a
    summary without them."""
    if not isinstance(c, Mapping) or "n" not in c:
        return None
    n, k, known = c.get("n") or 0, c.get("successes") or 0, c.get("known") or 0
    return {
        "successes": k,
        "n": n,
        "unknown": n - known,
        "rate": k / n if n else None,
        # a no-break space before '%': a narrow cell never parts the number from its sign
        "text": f"{k} of {n} ({100 * k / n:.1f}\u00a0%)" if n else "0 of 0",
    }


def _paired(p: Any) -> dict[str, Any] | None:
    """The actor's and the guarded success over the same pairs (`policies.stats.report.
    paired_rates`), or None from a summary without them."""
    if not isinstance(p, Mapping) or "n" not in p:
        return None
    n = p.get("n")
    return {
        **p,
        "text": f"actor {p.get('actor_k')} of {n}, guarded {p.get('guarded_k')} of {n}",
    }


def delta_display(o: Mapping[str, Any] | None) -> dict[str, Any]:
    """Display fields of one stored effect (`policies.stats.report.effect`); every key present."""
    o = o or {}
    transitions = o.get("transitions") or {}
    n_unknown = o.get("n_unknown")
    if n_unknown is None:  # a summary stored before n_unknown existed
        n_unknown = int(transitions.get("unknown") or 0)
    has_unknowns = bool(n_unknown)
    ci_known = _interval(o.get("ci_known") if "ci_known" in o else o.get("ci"))
    ci = _interval(o.get("ci"))
    ci_kind = o.get("ci_kind") or ("known_pairs" if ci is not None else None)
    # policies.stats.delta already withholds it (ci_known None, ci_known_degenerate true)
    withheld = bool(has_unknowns and o.get("ci_known_degenerate"))
    if has_unknowns and ci_known is not None and ci_known[0] == ci_known[1]:
        ci_known, withheld = None, True
    if has_unknowns and ci is not None and ci[0] == ci[1] and ci_kind != "with_unknowns":
        # a summary's degenerate known-pairs CI as headline: it would read as certainty
        ci, ci_kind, withheld = None, None, True
    bounds = _interval(o.get("bounds"))
    excludes_zero = o.get("excludes_zero")
    if ci is None:
        excludes_zero = None
    elif excludes_zero is None:
        excludes_zero = ci[0] > 0.0 or ci[1] < 0.0
    # The colour class: which side of 0 the whole interval lies on, or neither.
    if excludes_zero is None or ci is None:
        significance = "none"
    elif excludes_zero:
        significance = "sig-pos" if ci[0] > 0.0 else "sig-neg"
    else:
        significance = "nonsig"
    delta_known = o.get("delta_known", o.get("delta"))
    # Traces of unknown transition: the Δ's unknown pairs, plus exact replays of an unknown
    # outcome (the guarded run is the actor's, so they cannot move Δ either way).
    unknown_traces = max(int(transitions.get("unknown") or 0), int(n_unknown or 0))
    n_known = o.get("n_known", o.get("n_paired"))
    return {
        "n": o.get("n"),
        "n_applicable": o.get("n_applicable", o.get("n")),
        "n_not_applicable": o.get("n_not_applicable", transitions.get("not_applicable", 0)),
        "n_known": n_known,
        "n_unknown": n_unknown,
        "unknown_traces": unknown_traces,
        "unknown_replays": unknown_traces - int(n_unknown or 0),
        "delta_known": delta_known,
        "ci_known": ci_known,
        "ci_known_withheld": withheld,
        "bounds": bounds,
        "ci": ci,
        "ci_kind": ci_kind,
        "ci_label": CI_KIND_LABELS.get(str(ci_kind), "CI"),
        "level": o.get("level", 0.95),
        "excludes_zero": excludes_zero,
        "significance": significance,
        "actor": _counts(o.get("actor_counts"), o.get("actor_success")),
        "actor_all": _all_counts(o.get("actor_counts_all")),
        "guarded": _counts(o.get("guarded_counts"), o.get("guarded_success")),
        "paired": _paired(o.get("paired")),
        "transitions": dict(transitions),
        "mcnemar_p": o.get("mcnemar_p"),
        "meaning": delta_meaning(
            delta_known=delta_known,
            n_known=n_known,
            n_paired=(o.get("paired") or {}).get("n")
            if isinstance(o.get("paired"), Mapping)
            else None,
            n_unknown=int(n_unknown or 0),
            bounds=bounds,
            significance=significance,
            n_applicable=o.get("n_applicable", o.get("n")),
            n_not_applicable=o.get("n_not_applicable", transitions.get("not_applicable", 0)),
        ),
    }


def _points(x: float) -> str:
    """A difference of rates as "n in 100" (one decimal when it is not whole)."""
    v = abs(x) * 100
    return f"{v:.0f}" if abs(v - round(v)) < 0.05 else f"{v:.1f}"


def delta_meaning(
    *,
    delta_known: Any,
    n_known: Any,
    n_paired: Any,
    n_unknown: int,
    bounds: list[float] | None,
    significance: str,
    n_applicable: Any,
    n_not_applicable: Any,
) -> str:
    """The Δ in one plain sentence or two: what it says, over which traces, whether its
    interval rules out chance, and how far the unknowns could move it."""
    if not n_applicable and n_not_applicable:
        return "The policy had nothing to decide on any trace, so there is no effect to report."
    if not isinstance(delta_known, int | float):
        text = "No trace has both outcomes known yet, so the effect cannot be measured"
        return text + (
            f": {n_unknown} trace{'s' if n_unknown != 1 else ''} await an annotator's verdict."
            if n_unknown
            else "."
        )
    n = int(n_known or 0)
    over = f"Over the {n} trace{'s' if n != 1 else ''} where the two runs' difference is known"
    replays = n - int(n_paired) if isinstance(n_paired, int) else 0
    if replays > 0:
        over += (
            f" ({n_paired} with both outcomes known, {replays} exact replay"
            f"{'s' if replays != 1 else ''} of an unknown outcome: no difference)"
        )
    if abs(delta_known) < 1e-12:
        text = f"{over}, the guard made no difference on balance: as many rescues as harms."
    else:
        more = "more" if delta_known > 0 else "fewer"
        k = round(abs(delta_known) * n)
        text = (
            f"{over}, the guarded run succeeds on {k} {more} than the actor "
            f"({_points(delta_known)} {more} in 100 tasks)."
        )
    text += {
        "sig-pos": " Its interval lies above 0: unlikely to be chance.",
        "sig-neg": " Its interval lies below 0: unlikely to be chance.",
        "nonsig": " Its interval includes 0: it could be chance.",
    }.get(significance, "")
    if n_unknown and bounds:
        text += (
            f" {n_unknown} trace{'s' if n_unknown != 1 else ''} of unknown outcome could move it "
            f"anywhere from {bounds[0]:+.3f} to {bounds[1]:+.3f}."
        )
    return text


def _fmt(x: Any) -> str:
    return f"{x:+.3f}" if isinstance(x, int | float) else "—"


def _fmt_interval(iv: list[float] | None) -> str:
    return f"[{_fmt(iv[0])}, {_fmt(iv[1])}]" if iv else "—"


def delta_text(d: Mapping[str, Any]) -> str:
    """One line for the CLI: Δ over known pairs, its CI, the bounds, the headline CI, n_unknown."""
    known_ci = (
        "withheld (degenerate while unknowns exist)"
        if d["ci_known_withheld"] and d["ci_known"] is None
        else _fmt_interval(d["ci_known"])
    )
    return (
        f"Δ known pairs {_fmt(d['delta_known'])} CI {known_ci}; "
        f"bounds (unknowns all harm / all rescue) {_fmt_interval(d['bounds'])}; "
        f"{d['ci_label']} {_fmt_interval(d['ci'])}; n_unknown {d['n_unknown']}"
    )


def policy_statistics(summary: Mapping[str, Any] | None) -> dict[str, Any]:
    """A policy's statistics for JSON (CLI, exports): the overall display, not-applicable counts
    by reason, and the unknowns' annotation queue length."""
    s = summary or {}
    d = delta_display(s.get("overall"))
    return {
        **d,
        "not_applicable_reasons": dict(s.get("not_applicable") or {}),
        # the queue's length where the summary keeps it, else counted from the queue's items
        "annotation_queue": s.get("annotation_queue_n", len(s.get("annotation_queue") or [])),
    }


def model_statistics(summary: Mapping[str, Any] | None) -> dict[str, Any]:
    """A policy's tables per model for JSON (CLI, exports): per model (and per run source
    within a model that has several) its counts, the overall display (`policy_statistics`) and
    per-category Δ; and the difference of Δ between each two models on their common tasks."""
    s = summary or {}

    def part(p: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "n_traces": p.get("n_traces"),
            "applied": p.get("applied"),
            **policy_statistics(p),
            "per_category": {c: delta_display(o) for c, o in (p.get("per_category") or {}).items()},
        }

    per_model = {}
    for model, p in (s.get("per_model") or {}).items():
        per_model[model] = part(p)
        if p.get("sources"):
            per_model[model]["sources"] = {src: part(q) for src, q in p["sources"].items()}
    return {"per_model": per_model, "model_differences": list(s.get("model_differences") or [])}


def model_text(m: Mapping[str, Any]) -> str:
    """One line for the CLI per model (`model_statistics`' entry): the actor's success over all
    its traces, guarded beside actor over the same traces, Δ with its interval, the
    transitions."""
    actor = m.get("actor_all") or {}
    paired = m.get("paired") or {}
    t = m.get("transitions") or {}
    return (
        f"n {m.get('n')}; actor {actor.get('text', '—')} of all traces; "
        f"guarded {paired.get('guarded_k', '—')} vs actor {paired.get('actor_k', '—')} "
        f"of the same {paired.get('n', 0)} (applicable, both known); "
        f"Δ {_fmt(m.get('delta_known'))} interval {_fmt_interval(m.get('ci'))}; "
        f"rescue {t.get('rescue', 0)} harm {t.get('harm', 0)} unknown {t.get('unknown', 0)} "
        f"n/a {t.get('not_applicable', 0)}"
    )


def did_text(d: Mapping[str, Any]) -> str:
    """One line for the CLI per two models (`policies.stats.did`): the difference-in-differences
    of success on the tasks both ran."""
    return (
        f"DiD {d.get('a')} − {d.get('b')}: (guarded − actor) difference "
        f"{_fmt(d.get('did_known'))} on {d.get('n_tasks')} common tasks "
        f"(interval {_fmt_interval(_interval(d.get('ci')))}, worst/best "
        f"{_fmt_interval(_interval(d.get('bounds')))}, {d.get('n_unknown')} unknown)"
    )


def _n(k: int, word: str) -> str:
    return f"{k} {word}{'' if k == 1 else 's'}"


def headline_says(
    d: Mapping[str, Any], *, n_traces: int, applied: int, mcnemar_p: Any
) -> dict[str, str]:
    """One plain sentence under each headline number of a policy (`delta_display` ``d``), every
    count over the same set: the policy's applicable traces, out of the run's ``n_traces``."""
    tr = d.get("transitions") or {}
    applicable = int(d.get("n_applicable") or 0)
    na = int(d.get("n_not_applicable") or 0)
    rescue, harm = int(tr.get("rescue") or 0), int(tr.get("harm") or 0)
    if isinstance(mcnemar_p, int | float):
        p = (
            f"p = {mcnemar_p:.3g}: a split this lopsided would be rare if the guard changed "
            "nothing."
            if mcnemar_p < 0.05
            else f"p = {mcnemar_p:.3g}: a split like this could well happen by chance."
        )
    else:
        p = "No p-value: there is no rescue or harm to test."
    unknown_traces = int(d.get("unknown_traces") or 0)
    n_unknown = int(d.get("n_unknown") or 0)
    if unknown_traces:
        unknown = (
            f"{_n(unknown_traces, 'trace')} of the {applicable} applicable "
            f"{'has' if unknown_traces == 1 else 'have'} an outcome not known yet; "
            f"{n_unknown} of them could move Δ. An annotator's verdict settles each."
        )
    else:
        unknown = f"Every outcome of the {applicable} applicable traces is known."
    return {
        "scope": (
            f"{applicable} of the run's {_n(n_traces, 'trace')} are applicable"
            + (f" ({na} not applicable)" if na else "")
            + f"; the policy intervened in {applied} of those {applicable}."
        ),
        "rescue_harm": (
            f"Of the {applicable} applicable traces, the guard fixed {_n(rescue, 'task')} the "
            f"actor failed and broke {_n(harm, 'task')} the actor got right."
        ),
        "mcnemar": p,
        "unknown": unknown,
        "success": (
            "Each rate is over the traces where its own outcome is known; the paired line "
            "compares both over the same traces."
        ),
        "na": (
            f"The policy had nothing to decide on {na} of the run's {_n(n_traces, 'trace')}; they "
            "are left out of every number above."
            if na
            else "The policy could decide on every trace."
        ),
    }
