"""Δ that never hides an unknown (policies.stats.delta; SPEC §5.5)."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.stats.delta import Pair, delta_report, success_counts

outcome = st.sampled_from([True, False, None])
pairs = st.lists(
    st.builds(Pair, outcome, outcome, st.booleans()).map(
        lambda p: Pair(p.actor, p.actor, True) if p.identical else p
    ),
    min_size=1,
    max_size=25,
)


def test_difference_range_of_each_kind_of_pair() -> None:
    assert Pair(True, False).difference_range() == (-1, -1)
    assert Pair(True, None).difference_range() == (-1, 0)  # only harm or same
    assert Pair(False, None).difference_range() == (0, 1)  # only rescue or same
    assert Pair(None, True).difference_range() == (0, 1)
    assert Pair(None, None).difference_range() == (-1, 1)
    assert Pair(None, None, identical=True).difference_range() == (0, 0)  # nothing changed


def test_hidden_harms_among_unknowns_never_show_a_degenerate_interval() -> None:
    # 40 traces the guard left alone (same), 10 where it shipped something unlabelled
    pairs_ = [Pair(True, True)] * 40 + [Pair(True, None)] * 10
    d = delta_report(pairs_, n_boot=500)
    assert d["n_unknown"] == 10 and d["n_known"] == 40
    assert d["delta_known"] == 0.0
    assert d["ci_known"] is None and d["ci_known_degenerate"]  # [0, 0] is withheld
    assert d["bounds"] == [-0.2, 0.0]
    assert d["ci_kind"] == "with_unknowns"
    lo, hi = d["ci"]
    assert lo <= -0.2 and hi >= 0.0 and lo < hi
    assert d["excludes_zero"] is False
    json.dumps(d, allow_nan=False)


def test_without_unknowns_the_headline_is_the_known_pairs_ci() -> None:
    d = delta_report([Pair(False, True)] * 30 + [Pair(True, True)] * 20, n_boot=300)
    assert d["ci_kind"] == "known_pairs" and d["ci"] == d["ci_known"]
    assert d["bounds"] == [0.6, 0.6] and d["excludes_zero"] is True
    empty = delta_report([])
    assert empty["ci"] is None and empty["n"] == 0 and empty["excludes_zero"] is None


def test_success_counts_are_known_successes_of_known_n() -> None:
    assert success_counts([True, None, False, True]) == {
        "successes": 2,
        "known": 3,
        "n": 4,
        "rate": pytest.approx(2 / 3),
    }
    assert success_counts([None])["rate"] is None


@given(ps=pairs)
@settings(max_examples=60, deadline=None)
def test_bounds_contain_delta_for_every_way_the_unknowns_could_turn_out(ps: list[Pair]) -> None:
    d = delta_report(ps, n_boot=200)
    lo, hi = d["bounds"]
    unknown = [i for i, p in enumerate(ps) if not p.known]
    for fill in itertools.islice(
        itertools.product(
            *[range(ps[i].difference_range()[0], ps[i].difference_range()[1] + 1) for i in unknown]
        ),
        64,
    ):
        diffs = [float(p.difference_range()[0]) for p in ps]
        for i, v in zip(unknown, fill, strict=True):
            diffs[i] = float(v)
        assert lo - 1e-12 <= sum(diffs) / len(ps) <= hi + 1e-12
    ci_lo, ci_hi = d["ci"]
    assert ci_lo <= lo + 1e-12 and ci_hi >= hi - 1e-12
    if unknown:
        assert ci_lo < ci_hi  # never degenerate while an unknown could move Δ
        assert d["ci_known"] is None or d["ci_known"][0] < d["ci_known"][1]
    assert d["n_known"] + d["n_unknown"] == len(ps)
