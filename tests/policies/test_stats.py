from __future__ import annotations

import math
import random

import pytest
from scipy import stats as sps

from policies.stats.methods import (
    average_precision,
    brier_score,
    cohen_kappa,
    holm,
    krippendorff_alpha_nominal,
    mcnemar_exact,
    paired_bootstrap_ci,
    reliability_bins,
    roc_auc,
)
from policies.transitions import MAX_TRANSITION_LENGTH, transition, transition_counts


@pytest.mark.parametrize(
    "b,c",
    # the last three past 1,023 discordant pairs, where 2.0**n overflowed a float (a run of
    # 100k traces reached it and its summary failed)
    [(0, 0), (21, 0), (5, 3), (10, 10), (1, 12), (37, 2), (0, 7), (600, 700), (4000, 4100),
     (30000, 20)],
)  # fmt: skip
def test_mcnemar_exact_matches_scipy_binomtest(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else sps.binomtest(b, b + c, 0.5).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "b,c",
    [(600, 500), (1000, 1100), (20_000, 21_000), (29_900, 30_000), (50_000, 50_000), (3, 5_000)],
)
def test_mcnemar_exact_on_large_runs(b: int, c: int) -> None:
    """Thousands of discordant pairs (a 10⁵-trace run) once overflowed 2.0**n: the p-value is
    the exact binomial tail, within a float's precision."""
    n, k = b + c, min(b, c)
    term = tail = 1  # every term of the tail, exactly: C(n, i + 1) = C(n, i)·(n − i)/(i + 1)
    for i in range(k):
        term = term * (n - i) // (i + 1)
        tail += term
    exact = min(1.0, 2 * tail / (1 << n))
    assert mcnemar_exact(b, c) == pytest.approx(exact, rel=1e-15, abs=0)
    if n < 5000:
        assert mcnemar_exact(b, c) == pytest.approx(sps.binomtest(b, n, 0.5).pvalue, rel=1e-9)


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)


def test_holm_worked_example_keeps_input_order_and_monotonicity() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_cohen_kappa_textbook_example() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 → κ = 0.4 (Wikipedia worked example)
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_cohen_kappa_edges() -> None:
    assert math.isnan(cohen_kappa([], []))
    assert cohen_kappa(["x", "x"], ["x", "x"]) == 1.0
    with pytest.raises(ValueError):
        cohen_kappa(["a"], ["a", "b"])


def test_krippendorff_alpha_worked_example_nominal_with_missing_data() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", 4 coders × 12 units
    N = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
        [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
    ]
    units = [list(u) for u in zip(*coders, strict=True)]
    assert krippendorff_alpha_nominal(units) == pytest.approx(0.743, abs=5e-4)


def test_krippendorff_alpha_two_coders_no_missing_equals_known_relation() -> None:
    # perfect agreement → 1; no pairable unit → NaN
    assert krippendorff_alpha_nominal([["a", "a"], ["b", "b"], ["a", "a"]]) == 1.0
    assert math.isnan(krippendorff_alpha_nominal([["a", None], [None, "b"]]))


def test_roc_auc_matches_mann_whitney_with_ties() -> None:
    rng = random.Random(3)
    scores = [round(rng.random(), 1) for _ in range(80)]
    labels = [rng.random() < 0.3 + 0.4 * s for s in scores]
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    u = sps.mannwhitneyu(pos, neg).statistic
    assert roc_auc(scores, labels) == pytest.approx(u / (len(pos) * len(neg)))
    assert math.isnan(roc_auc([0.1, 0.2], [True, True]))


def test_average_precision_worked_example() -> None:
    # scikit-learn documentation example: AP = 0.8333…
    assert average_precision([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == pytest.approx(
        0.833333, abs=1e-6
    )
    assert average_precision([0.9, 0.1], [True, False]) == 1.0
    assert math.isnan(average_precision([0.3], [False]))


def test_bootstrap_is_seeded_and_deterministic() -> None:
    rng = random.Random(0)
    actor = [rng.random() < 0.45 for _ in range(159)]
    guarded = [a or rng.random() < 0.25 for a in actor]
    cats = [i % 4 for i in range(159)]
    first = paired_bootstrap_ci(actor, guarded, cats, n_boot=500, seed=7)
    again = paired_bootstrap_ci(actor, guarded, cats, n_boot=500, seed=7)
    other = paired_bootstrap_ci(actor, guarded, cats, n_boot=500, seed=8)
    assert first == again
    assert (first.low, first.high) != (other.low, other.high)
    assert first.low <= first.estimate <= first.high
    delta = (sum(guarded) - sum(actor)) / 159
    assert first.estimate == pytest.approx(delta)


def test_bootstrap_stratifies_by_category() -> None:
    # category 0 always gains 0, category 1 always gains 1: resampling within categories keeps
    # the mean at exactly 0.5, while an unstratified bootstrap varies
    actor = [0.0] * 100
    guarded = [0.0] * 50 + [1.0] * 50
    cats = ["a"] * 50 + ["b"] * 50
    strat = paired_bootstrap_ci(actor, guarded, cats, n_boot=300, seed=1)
    plain = paired_bootstrap_ci(actor, guarded, None, n_boot=300, seed=1)
    assert strat.low == pytest.approx(0.5) and strat.high == pytest.approx(0.5)
    assert plain.high - plain.low > 0.1


@pytest.mark.parametrize("seed", range(12))
def test_bootstrap_of_constant_strata_skips_numpy_and_equals_its_draws(seed: int) -> None:
    # Strata of one distinct row each (a run without discordant pairs) take the path without
    # numpy: the same floats, bit for bit, as the multinomial draws'.
    from collections import defaultdict

    from policies.stats import methods as stats

    rng = random.Random(seed)
    values = [0.0, -0.0, 1.0, -1.0, 0.1, 1 / 3, 1e300, -2.5e-8, 7.0]
    strata: dict = defaultdict(list)
    for cat in rng.sample(["a", "b", 3, None, ("t", 0)], rng.randint(0, 5)):
        strata[cat] = [tuple(rng.choice(values) for _ in range(2))] * rng.randint(1, 300)
    n = sum(len(rows) for rows in strata.values())
    n_boot = rng.choice([0, 1, 50, 2000])
    fast = stats._constant_means(strata, 2, n, n_boot, seed)
    assert fast is not None
    assert fast == stats._multinomial_means(strata, 2, n, n_boot, seed)
    assert [[math.copysign(1.0, x) for x in col] for col in fast] == [
        [math.copysign(1.0, x) for x in col]
        for col in stats._multinomial_means(strata, 2, n, n_boot, seed)
    ]
    # two distinct rows in a stratum, a NaN, or a seed numpy would refuse: the general path
    assert stats._constant_means({"a": [(0.0,), (1.0,)]}, 1, 2, 10, seed) is None
    assert stats._constant_means({"a": [(math.nan,)]}, 1, 1, 10, seed) is None
    assert stats._constant_means({"a": [(1.0,)]}, 1, 1, 10, -1) is None


def test_bootstrap_empty_and_mismatched() -> None:
    assert math.isnan(paired_bootstrap_ci([], []).estimate)
    with pytest.raises(ValueError):
        paired_bootstrap_ci([1.0], [1.0, 0.0])


def test_brier_and_reliability() -> None:
    assert brier_score([0.9, 0.2], [True, False]) == pytest.approx((0.01 + 0.04) / 2)
    assert math.isnan(brier_score([], []))
    bins = reliability_bins([0.05, 0.95, 1.0, 0.5], [False, True, True, False], n_bins=10)
    assert [b["count"] for b in bins] == [1, 1, 2]
    assert bins[-1]["frequency"] == 1.0 and bins[1]["low"] == 0.5


@pytest.mark.parametrize(
    "actor,guarded,expected",
    [
        (False, True, "rescue"),
        (True, False, "harm"),
        (True, True, "same"),
        (False, False, "same"),
        (None, True, "unknown"),
        (True, None, "unknown"),
    ],
)
def test_transition(actor: bool | None, guarded: bool | None, expected: str) -> None:
    assert transition(actor, guarded) == expected


def test_transition_counts_has_every_key() -> None:
    assert transition_counts([(False, True), (None, None)]) == {
        "rescue": 1,
        "harm": 0,
        "same": 0,
        "unknown": 1,
        "not_applicable": 0,
    }


def test_not_applicable_is_never_same_and_says_why() -> None:
    assert transition(True, True, "no feedback messages") == "not_applicable"
    assert transition(None, None, "no tool calls") == "not_applicable"
    assert transition(True, True, None) == "same"
    assert MAX_TRANSITION_LENGTH == len("not_applicable") == 14
