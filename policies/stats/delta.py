"""Δ (guarded − actor success) that never hides an unknown (SPEC §5.5).

A run's pairs are (actor outcome, guarded outcome), either side possibly unknown. Reported:

- ``delta_known`` and ``ci_known``: over the pairs whose difference is known, labelled as such;
  a degenerate ``ci_known`` (low = high, e.g. [0, 0] when every known pair is "same") is
  withheld (None, ``ci_known_degenerate`` true) while unknowns exist, since it would read as
  certainty the run does not have;
- ``bounds``: the sharp bounds of Δ over **all** applicable pairs — every unknown a harm where
  it can be one (worst) / a rescue where it can be one (best). An unknown guarded outcome next
  to a successful actor can only be a harm or the same, next to a failed actor only a rescue
  or the same; with both sides unknown it can be either;
- ``ci``: the headline interval. Without unknowns it is ``ci_known``; with unknowns it is the
  bootstrap interval of the bounds (lower quantile of the worst case, upper of the best case,
  widened to contain the point bounds), which covers Δ whatever the unknowns turn out to be —
  never a degenerate [0, 0] while an unknown could still move Δ;
- ``excludes_zero``: whether the headline interval excludes 0 (for colouring by significance).

A pair whose guarded trajectory *is* the actor's (continuation ``exact``) contributes exactly 0
even when its outcome is unknown: the policy changed nothing there. Such pairs are still
"unknown" transitions (their outcome needs a verdict), but they cannot move Δ.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .methods import counted_bootstrap_means, quantile, stratified_bootstrap_means


@dataclass(frozen=True, slots=True)
class Pair:
    actor: bool | None
    guarded: bool | None
    identical: bool = False  # the guarded trajectory is the actor's

    def difference_range(self) -> tuple[int, int]:
        """(lowest, highest) possible guarded − actor for this pair."""
        if self.identical:
            return 0, 0
        a, g = self.actor, self.guarded
        if a is not None and g is not None:
            d = int(g) - int(a)
            return d, d
        if a is None and g is None:
            return -1, 1
        if a is None:  # guarded known: success → same or rescue, failure → same or harm
            return (0, 1) if g else (-1, 0)
        return (-1, 0) if a else (0, 1)  # actor known, guarded unknown

    @property
    def known(self) -> bool:
        lo, hi = self.difference_range()
        return lo == hi


def _interval(low: float, high: float) -> list[float]:
    return [low, high]


def delta_report(
    pairs: Sequence[Pair],
    categories: Sequence[Hashable] | None = None,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Δ over ``pairs`` (one per applicable trace) as described in the module docstring.
    Plain data; None where undefined (no pairs, or no known pair for the known-pairs Δ)."""
    cats = list(categories) if categories is not None else [""] * len(pairs)
    if len(cats) != len(pairs):
        raise ValueError("one category per pair")
    n = len(pairs)
    ranges = [p.difference_range() for p in pairs]
    known = [i for i, (lo, hi) in enumerate(ranges) if lo == hi]
    n_known = len(known)
    out: dict[str, Any] = {k: None for k in _REPORT_KEYS}
    out.update(n=n, n_known=n_known, n_unknown=n - n_known, level=level)
    if n == 0:
        return out
    tail = (1.0 - level) / 2.0
    if known:
        diffs = [float(ranges[i][0]) for i in known]
        [dist] = stratified_bootstrap_means(
            [diffs], [cats[i] for i in known], n_boot=n_boot, seed=seed
        )
        ci_known = _interval(quantile(dist, tail), quantile(dist, 1.0 - tail))
        out.update(
            delta_known=sum(diffs) / n_known,
            ci_known=ci_known,
            ci_known_degenerate=ci_known[0] == ci_known[1],
        )
    worst = [float(lo) for lo, _ in ranges]
    best = [float(hi) for _, hi in ranges]
    bounds = _interval(sum(worst) / n, sum(best) / n)
    return _with_bounds(
        out,
        bounds,
        tail,
        lambda: stratified_bootstrap_means([worst, best], cats, n_boot=n_boot, seed=seed),
    )


def delta_report_counted(
    pairs: Mapping[Any, Mapping[Pair, int]],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """`delta_report` of pairs given as how many of each there are per category: the same
    report (the bootstrap resamples within categories and reads only these counts; sums of
    differences in −1, 0, 1 are exact in any order), in memory of the counts — a run summary's
    pairs take 18 values whatever the number of traces."""
    out: dict[str, Any] = {k: None for k in _REPORT_KEYS}
    ranges = {p: p.difference_range() for c in pairs.values() for p in c}
    n = sum(k for c in pairs.values() for k in c.values())
    n_known = sum(k for c in pairs.values() for p, k in c.items() if p.known)
    out.update(n=n, n_known=n_known, n_unknown=n - n_known, level=level)
    if n == 0:
        return out
    tail = (1.0 - level) / 2.0

    def counted(value: Any) -> dict[Hashable, dict[tuple[float, ...], int]]:
        """Per category: how many pairs have each row ``value(range)`` (known pairs only when
        the value is None for the others)."""
        out: dict[Hashable, dict[tuple[float, ...], int]] = {}
        for cat, c in pairs.items():
            for p, k in c.items():
                row = value(ranges[p])
                if row is not None and k:
                    out.setdefault(cat, {})
                    out[cat][row] = out[cat].get(row, 0) + k
        return out

    if n_known:
        known = counted(lambda r: (float(r[0]),) if r[0] == r[1] else None)
        [dist] = counted_bootstrap_means(known, 1, n_boot=n_boot, seed=seed)
        ci_known = _interval(quantile(dist, tail), quantile(dist, 1.0 - tail))
        total = sum(int(row[0]) * k for c in known.values() for row, k in c.items())
        out.update(
            delta_known=float(total) / n_known,
            ci_known=ci_known,
            ci_known_degenerate=ci_known[0] == ci_known[1],
        )
    worst = sum(ranges[p][0] * k for c in pairs.values() for p, k in c.items())
    best = sum(ranges[p][1] * k for c in pairs.values() for p, k in c.items())
    bounds = _interval(float(worst) / n, float(best) / n)
    return _with_bounds(
        out,
        bounds,
        tail,
        lambda: counted_bootstrap_means(
            counted(lambda r: (float(r[0]), float(r[1]))), 2, n_boot=n_boot, seed=seed
        ),
    )


def _with_bounds(
    out: dict[str, Any],
    bounds: list[float],
    tail: float,
    worst_best_draws: Callable[[], Sequence[Sequence[float]]],
) -> dict[str, Any]:
    """The report's end, from its known-pairs part and the bounds: the CI is the known pairs'
    when every pair is known, else the one covering every unknown (the worst and best means'
    bootstrap, drawn only then, never narrower than the bounds); a degenerate known-pairs CI is
    withheld while unknowns exist."""
    out["bounds"] = bounds
    if out["n_known"] == out["n"]:
        out.update(ci=out["ci_known"], ci_kind="known_pairs")
    else:
        w_dist, b_dist = worst_best_draws()
        ci = _interval(
            min(quantile(w_dist, tail), bounds[0]), max(quantile(b_dist, 1.0 - tail), bounds[1])
        )
        out.update(ci=ci, ci_kind="with_unknowns")
    if out["ci_known_degenerate"] and out["n_known"] < out["n"]:
        out["ci_known"] = None
    ci = out["ci"]
    out["excludes_zero"] = bool(ci[0] > 0.0 or ci[1] < 0.0)
    return out


_REPORT_KEYS: tuple[str, ...] = ("n", "n_known", "n_unknown", "level", "delta_known")
_REPORT_KEYS += ("ci_known", "ci_known_degenerate", "bounds", "ci", "ci_kind", "excludes_zero")


def success_counts_counted(outcomes: Mapping[bool | None, int]) -> dict[str, Any]:
    """`success_counts` of outcomes given as how many of each there are."""
    known = sum(k for o, k in outcomes.items() if o is not None)
    successes = sum(k for o, k in outcomes.items() if o)
    return {
        "successes": successes,
        "known": known,
        "n": sum(outcomes.values()),
        "rate": successes / known if known else None,
    }


def success_counts(outcomes: Sequence[bool | None]) -> dict[str, Any]:
    """Top-level counts as known successes of known n (never successes of all n)."""
    known = [o for o in outcomes if o is not None]
    k = sum(1 for o in known if o)
    return {
        "successes": k,
        "known": len(known),
        "n": len(outcomes),
        "rate": k / len(known) if known else None,
    }
