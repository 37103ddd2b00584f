"""Statistics for audit runs and annotations (SPEC §5.5).

Pure Python (``math`` and a seeded ``random.Random``) so results are deterministic across
platforms and cheap for the sizes an audit run has (hundreds to thousands of tasks).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Interval:
    estimate: float
    low: float
    high: float
    level: float
    n_boot: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default ``linear`` method)."""
    n = len(sorted_values)
    if n == 0:
        return math.nan
    pos = q * (n - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def stratified_bootstrap_means(
    columns: Sequence[Sequence[float]],
    categories: Sequence[Hashable] | None,
    *,
    n_boot: int,
    seed: int,
) -> list[list[float]]:
    """Bootstrap distribution of the mean of each column, resampling rows with replacement
    **within each category** (the same resampled rows for every column, so paired columns stay
    paired). Returns, per column, its ``n_boot`` resampled means, sorted."""
    n = len(columns[0]) if columns else 0
    if any(len(c) != n for c in columns):
        raise ValueError("columns must have one entry per task")
    cats = list(categories) if categories is not None else [None] * n
    if len(cats) != n:
        raise ValueError("categories must have one entry per task")
    strata: dict[Hashable, list[tuple[float, ...]]] = defaultdict(list)
    for i, c in enumerate(cats):
        strata[c].append(tuple(float(col[i]) for col in columns))
    constant = _constant_means(strata, len(columns), n, n_boot, seed)
    if constant is not None:
        return constant
    return _multinomial_means(strata, len(columns), n, n_boot, seed)


def counted_bootstrap_means(
    strata: Mapping[Any, Mapping[tuple[float, ...], int]],
    n_columns: int,
    *,
    n_boot: int,
    seed: int,
) -> list[list[float]]:
    """`stratified_bootstrap_means` of rows given by how many times each occurs per category
    (finite values): the same draws, in memory of the distinct rows (a run summary's outcomes
    take a handful of values, whatever the number of traces)."""
    # np.unique's order: the rows sorted, lexicographically (as tuples of finite floats)
    distinct = {key: sorted(r for r, k in c.items() if k > 0) for key, c in strata.items()}
    counted = [
        (key, rows, [strata[key][r] for r in rows])
        for key, rows in sorted(distinct.items(), key=lambda kv: repr(kv[0]))
        if rows
    ]
    n = sum(sum(counts) for _, _, counts in counted)
    constant = _constant_from(
        [(sum(counts), rows) for _, rows, counts in counted], n_columns, n, n_boot, seed
    )
    if constant is not None:
        return constant
    import numpy as np

    arrays = [
        (np.asarray(rows, dtype=np.float64), np.asarray(counts, dtype=np.intp))
        for _, rows, counts in counted
    ]
    return _draw_means(arrays, n_columns, n, n_boot, seed)


def _multinomial_means(
    strata: dict[Hashable, list[tuple[float, ...]]], k: int, n: int, n_boot: int, seed: Any
) -> list[list[float]]:
    import numpy as np  # here, not at module level: keeps numpy out of the per-trace imports

    distinct = [
        np.unique(np.asarray(strata[key], dtype=np.float64), axis=0, return_counts=True)
        for key in sorted(strata, key=repr)
    ]
    return _draw_means(distinct, k, n, n_boot, seed)


def _draw_means(
    strata: Sequence[tuple[Any, Any]], k: int, n: int, n_boot: int, seed: Any
) -> list[list[float]]:
    """Per column, the sorted means of ``n_boot`` resamples; ``strata``: each category's
    distinct rows and their counts (numpy arrays), in order of the categories' repr.
    Resampling m rows with replacement from a stratum is a multinomial draw over its distinct
    rows (with their counts as weights): the same distribution, drawn in O(n_boot x k) instead
    of O(n_boot x m) — outcomes are 0/1, so a row takes a handful of values."""
    import numpy as np

    rng = np.random.default_rng(seed)
    totals = np.zeros((n_boot, k))
    for rows, counts in strata:
        draws = rng.multinomial(int(counts.sum()), counts / counts.sum(), size=n_boot)
        totals += draws @ rows
    means = totals / max(n, 1)
    return [sorted(means[:, j].tolist()) for j in range(k)]


def _constant_means(
    strata: dict[Hashable, list[tuple[float, ...]]], k: int, n: int, n_boot: int, seed: Any
) -> list[list[float]] | None:
    """The bootstrap when every stratum holds one distinct row (a run with no discordant
    pair: every difference 0): each resample of a stratum of m rows is m times that row, so
    every replicate's mean is the same number. It is computed as the general path does — per
    stratum in the same order, m x row, summed from 0.0, divided by n, each one IEEE operation
    as numpy's — without numpy, ~40 ms of importing in a short CLI audit. None
    (the general path) otherwise, and for the arguments numpy would reject."""
    ordered = [(len(strata[key]), strata[key]) for key in sorted(strata, key=repr)]
    return _constant_from(ordered, k, n, n_boot, seed)


def _constant_from(
    strata: Sequence[tuple[int, Sequence[tuple[float, ...]]]],
    k: int,
    n: int,
    n_boot: int,
    seed: Any,
) -> list[list[float]] | None:
    """`_constant_means` of (how many rows, the rows or the distinct rows) per stratum, in the
    general path's order."""
    if type(seed) is not int or seed < 0 or type(n_boot) is not int or n_boot < 0:
        return None
    rows = []
    for m, stratum in strata:
        first, *rest = stratum
        if any(r != first for r in rest) or any(v != v for v in first):  # v != v: NaN
            return None
        rows.append((m, first))
    totals = [0.0] * k
    for m, row in rows:
        for j in range(k):
            totals[j] += m * row[j]
    return [[t / max(n, 1)] * n_boot for t in totals]


def paired_bootstrap_ci(
    actor: Sequence[float],
    guarded: Sequence[float],
    categories: Sequence[Hashable] | None = None,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """CI of mean(guarded − actor) by resampling tasks with replacement **within each
    category** (category-stratified paired bootstrap, TwinCheck Tables 1–3). Deterministic for
    a given seed. Empty input gives NaNs."""
    if len(actor) != len(guarded):
        raise ValueError("actor and guarded must be paired (same length)")
    n = len(actor)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, level, n_boot, seed)
    diffs = [float(g) - float(a) for a, g in zip(actor, guarded, strict=True)]
    [stats] = stratified_bootstrap_means([diffs], categories, n_boot=n_boot, seed=seed)
    return _percentile_interval(sum(diffs) / n, stats, level, n_boot, seed)


def _percentile_interval(
    estimate: float, stats: Sequence[float], level: float, n_boot: int, seed: int
) -> Interval:
    """The estimate with the percentile interval of its bootstrap draws at ``level``."""
    tail = (1.0 - level) / 2.0
    return Interval(
        estimate=estimate,
        low=quantile(stats, tail),
        high=quantile(stats, 1.0 - tail),
        level=level,
        n_boot=n_boot,
        seed=seed,
    )


def counted_paired_bootstrap_ci(
    diffs: Mapping[Any, Mapping[int, int]],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """`paired_bootstrap_ci` of 0/1 outcomes given as how many pairs per category have each
    difference guarded − actor (−1, 0 or 1): the same interval, in memory of the counts."""
    n = sum(sum(c.values()) for c in diffs.values())
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, level, n_boot, seed)
    strata: dict[Any, Mapping[tuple[float, ...], int]] = {
        cat: {(float(d),): k for d, k in c.items()} for cat, c in diffs.items()
    }
    [stats] = counted_bootstrap_means(strata, 1, n_boot=n_boot, seed=seed)
    # the sum of ±1.0 and 0.0 is exact (below 2⁵³) in any order: the integer sum's
    total = sum(d * k for c in diffs.values() for d, k in c.items())
    return _percentile_interval(float(total) / n, stats, level, n_boot, seed)


def mcnemar_exact(rescues: int, harms: int) -> float:
    """Two-sided exact McNemar p-value on the discordant pairs (rescue vs harm):
    ``min(1, 2·P[X ≤ min(b, c)])`` with X ~ Binom(b + c, ½)."""
    if rescues < 0 or harms < 0:
        raise ValueError("counts must be non-negative")
    n = rescues + harms
    if n == 0:
        return 1.0
    k = min(rescues, harms)
    if 2 * k >= n:  # b = c: P[X ≤ n/2] > ½
        return 1.0
    if n <= 1023:  # 2.0**n is a float up to here
        tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
        return min(1.0, 2.0 * tail)
    # Large runs (a 10⁵-trace run has thousands of discordant pairs, where 2.0**n
    # overflows): integers throughout, int / int rounds once. From C(n, k) down, the terms
    # fall (k < n/2), and the sum stops once what is left (≤ n times the current term) is
    # below 2⁻⁶⁰ of it — under a float's precision — instead of summing all k + 1 terms.
    term = total = math.comb(n, k)
    i = k
    while i > 0 and term * (n + 1) > total >> 60:
        term = term * i // (n - i + 1)  # C(n, i - 1), exact
        total += term
        i -= 1
    return min(1.0, 2.0 * (total / (1 << n)))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order (monotone, capped at 1)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's κ for two annotators over the same items. NaN when undefined (no items);
    1.0 when both annotators use one and the same category throughout (p_e = 1)."""
    if len(a) != len(b):
        raise ValueError("both annotators must rate the same items")
    n = len(a)
    if n == 0:
        return math.nan
    po = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb[k] for k in ca) / (n * n)
    if pe == 1.0:
        return 1.0 if po == 1.0 else math.nan
    return (po - pe) / (1.0 - pe)


def krippendorff_alpha_nominal(units: Sequence[Sequence[Hashable | None]]) -> float:
    """Krippendorff's α, nominal metric, with missing data (``None``).

    ``units[u]`` holds the values the coders gave unit ``u``; units with fewer than two values
    are not pairable and drop out (Krippendorff 2011, "Computing Krippendorff's
    Alpha-Reliability", §C). α = 1 − D_o / D_e from the coincidence matrix.
    """
    coincidence: dict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for unit in units:
        values = [v for v in unit if v is not None]
        m = len(values)
        if m < 2:
            continue
        counts = Counter(values)
        for c, nc in counts.items():
            for k, nk in counts.items():
                pairs = nc * (nk - 1) if c == k else nc * nk
                coincidence[(c, k)] += pairs / (m - 1)
    n_c: dict[Hashable, float] = defaultdict(float)
    for (c, _k), v in coincidence.items():
        n_c[c] += v
    n = sum(n_c.values())
    if n <= 1:
        return math.nan
    observed = sum(v for (c, k), v in coincidence.items() if c != k)
    expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k) / (n - 1)
    if expected == 0:
        return 1.0 if observed == 0 else math.nan
    return 1.0 - observed / expected


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """Area under the ROC curve (positives = ``True``), ties counted one half; NaN when one
    class is absent. Equals the Mann–Whitney U statistic / (n₊·n₋)."""
    pairs = sorted(zip(scores, labels, strict=True), key=lambda p: p[0])
    n_pos = sum(1 for _, y in pairs if y)
    n_neg = len(pairs) - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    rank_sum = 0.0
    i = 0
    while i < len(pairs):
        j = i
        while j + 1 < len(pairs) and pairs[j + 1][0] == pairs[i][0]:
            j += 1
        avg_rank = (i + j) / 2.0 + 1.0
        rank_sum += avg_rank * sum(1 for t in range(i, j + 1) if pairs[t][1])
        i = j + 1
    u = rank_sum - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


def average_precision(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """Average precision, Σₙ (Rₙ − Rₙ₋₁)·Pₙ over the distinct score thresholds in decreasing
    order (the scikit-learn definition, no interpolation). NaN without positives."""
    pairs = sorted(zip(scores, labels, strict=True), key=lambda p: -p[0])
    n_pos = sum(1 for _, y in pairs if y)
    if n_pos == 0:
        return math.nan
    ap = 0.0
    tp = fp = 0
    prev_recall = 0.0
    i = 0
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            if pairs[j][1]:
                tp += 1
            else:
                fp += 1
            j += 1
        recall = tp / n_pos
        ap += (recall - prev_recall) * (tp / (tp + fp))
        prev_recall = recall
        i = j
    return ap


def counted_roc_auc(groups: Mapping[float, tuple[int, int]]) -> float:
    """`roc_auc` of scores given as score → (how many, how many positive): the same figure
    (it reads the scores only by their tie groups), in memory of the distinct scores."""
    n_pos = sum(p for _, p in groups.values())
    n_neg = sum(n for n, _ in groups.values()) - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    rank_sum = 0.0
    i = 0
    for score in sorted(groups):
        n, pos = groups[score]
        j = i + n - 1
        avg_rank = (i + j) / 2.0 + 1.0
        rank_sum += avg_rank * pos
        i = j + 1
    u = rank_sum - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


def counted_average_precision(groups: Mapping[float, tuple[int, int]]) -> float:
    """`average_precision` of scores given as score → (how many, how many positive)."""
    n_pos = sum(p for _, p in groups.values())
    if n_pos == 0:
        return math.nan
    ap = 0.0
    tp = fp = 0
    prev_recall = 0.0
    for score in sorted(groups, reverse=True):
        n, pos = groups[score]
        tp += pos
        fp += n - pos
        recall = tp / n_pos
        ap += (recall - prev_recall) * (tp / (tp + fp))
        prev_recall = recall
    return ap


def brier_score(confidences: Sequence[float], outcomes: Sequence[bool]) -> float:
    """Mean squared error of stated probabilities against 0/1 outcomes; NaN when empty."""
    if not confidences:
        return math.nan
    return sum((c - float(o)) ** 2 for c, o in zip(confidences, outcomes, strict=True)) / len(
        confidences
    )


def reliability_bins(
    confidences: Sequence[float], outcomes: Sequence[bool], n_bins: int = 10
) -> list[dict[str, float | int]]:
    """Equal-width reliability curve: per non-empty bin, its range, count, mean confidence and
    observed frequency. A confidence of exactly 1.0 falls in the last bin."""
    bins: list[list[tuple[float, bool]]] = [[] for _ in range(n_bins)]
    for c, o in zip(confidences, outcomes, strict=True):
        b = min(int(c * n_bins), n_bins - 1) if c >= 0 else 0
        bins[b].append((c, o))
    out: list[dict[str, float | int]] = []
    for b, items in enumerate(bins):
        if not items:
            continue
        out.append(
            {
                "low": b / n_bins,
                "high": (b + 1) / n_bins,
                "count": len(items),
                "mean_confidence": sum(c for c, _ in items) / len(items),
                "frequency": sum(1 for _, o in items if o) / len(items),
            }
        )
    return out
