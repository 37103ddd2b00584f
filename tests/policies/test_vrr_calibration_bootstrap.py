"""The calibration bootstrap, vectorised for speed, draws and fits exactly what
the per-loop form did: each draw's weights are the counts of the drawn loops' members."""

from __future__ import annotations

import math
import random

import numpy as np

from policies.vrr.calibration import (
    VoteColumns,
    VoteObservation,
    _distinct_rows,
    _fit,
    calibrate,
    calibrate_columns,
    em_calibrate,
    transition_codes,
    transition_rates,
)


def observations(seed: int, n: int, loops: int) -> list[VoteObservation]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        votes = rnd.randint(1, 5)
        out.append(
            VoteObservation(
                rnd.randint(0, votes),
                votes,
                rnd.choice([None, None, True, False]),
                rnd.random() < 0.3,
                rnd.randrange(loops),
            )
        )
    return out


def _rows(obs: list[VoteObservation]) -> tuple[list[tuple[int, int, float, float]], list[int]]:
    """The distinct rows of observations as first written (objects, a dict of keys): the
    oracle of the columns' `_distinct_rows`."""
    keys: dict[tuple[int, int, float, float], int] = {}
    index: list[int] = []
    for o in obs:
        lab = math.nan if o.valid is None else float(o.valid)
        key = (o.accepts, o.votes, lab, 1.0 if o.first else 0.0)
        # NaN != NaN, so normalise the key for unlabelled rows
        key = key if not math.isnan(lab) else (o.accepts, o.votes, -1.0, key[3])
        if key not in keys:
            keys[key] = len(keys)
        index.append(keys[key])
    rows = sorted(keys, key=keys.__getitem__)
    return [(a, b, math.nan if c == -1.0 else c, d) for a, b, c, d in rows], index


def per_loop_samples(obs, transitions, n_boot: int, seed: int):  # type: ignore[no-untyped-def]
    """The bootstrap as first written: concatenate the drawn loops' members, count them."""
    em = em_calibrate(obs)
    rng = np.random.default_rng(seed)
    rows, index = _rows(obs)
    arr = np.array(rows, dtype=np.float64)
    idx = np.array(index)
    _, loop_of = np.unique(np.array([o.loop for o in obs]), return_inverse=True)
    by_loop = [np.flatnonzero(loop_of == i) for i in range(loop_of.max() + 1)]
    out = []
    for _ in range(n_boot):
        pick = rng.integers(0, len(by_loop), len(by_loop))
        members = np.concatenate([by_loop[i] for i in pick])
        w = np.bincount(idx[members], minlength=len(rows)).astype(np.float64)
        fit = _fit(
            arr[:, 0], arr[:, 1], w, arr[:, 2], arr[:, 3],
            p1=1 - em.rho1, p0=em.rho0, pi=em.prior_all, max_iter=100, tol=1e-8,
        )  # fmt: skip
        if transitions:
            t = [transitions[i] for i in rng.integers(0, len(transitions), len(transitions))]
            a, b, _ = transition_rates(t)
        else:
            a, b = math.nan, math.nan
        out.append((fit.rho0, fit.rho1, a, b, fit.prior_first))
    return out


def as_tuples(samples):  # type: ignore[no-untyped-def]
    return [(s.rho0, s.rho1, s.alpha, s.beta, s.prior) for s in samples]


def same(a, b) -> bool:  # type: ignore[no-untyped-def]
    """Exactly equal, NaN equal to NaN."""
    return len(a) == len(b) and all(
        x == y or (math.isnan(x) and math.isnan(y))
        for s, t in zip(a, b, strict=True)
        for x, y in zip(s, t, strict=True)
    )


def test_bootstrap_samples_equal_the_per_loop_form():
    obs = observations(1, 600, 150)
    rnd = random.Random(2)
    transitions = [(rnd.random() < 0.4, rnd.random() < 0.6) for _ in range(80)]
    cal = calibrate(obs, transitions, n_boot=25, seed=7)
    assert same(as_tuples(cal.samples), per_loop_samples(obs, transitions, 25, 7))
    assert len({s.rho0 for s in cal.samples}) > 1  # the draws differ: the test can tell


def test_bootstrap_without_transitions_equals_the_per_loop_form():
    obs = observations(3, 80, 12)
    cal = calibrate(obs, [], n_boot=10, seed=0)
    assert same(as_tuples(cal.samples), per_loop_samples(obs, [], 10, 0))
    assert all(math.isnan(s.alpha) and math.isnan(s.beta) for s in cal.samples)


def _same_rows(cols: VoteColumns, obs: list[VoteObservation]) -> None:
    rows, index = _distinct_rows(cols)
    want_rows, want_index = _rows(obs)
    assert index.tolist() == want_index
    assert rows.shape == (len(want_rows), 4)
    for got, want in zip(rows.tolist(), want_rows, strict=True):
        assert [x if not math.isnan(x) else "nan" for x in got] == [
            x if not (isinstance(x, float) and math.isnan(x)) else "nan" for x in want
        ]


def test_observations_as_columns_give_the_objects_rows_and_calibration():
    """A run's calibration keeps its observations as columns (auditor.runs.calibration); their
    distinct rows come in the objects' first-occurrence order, packed or not, and the
    calibration is the same to the last bit."""
    for seed in range(5):
        obs = observations(seed, 400, 30)
        obs += [VoteObservation(0, 0, None, False, 3)]  # no votes: left out by both
        cols = VoteColumns.from_observations(obs)
        informative = [o for o in obs if o.votes > 0]
        _same_rows(cols.informative(), informative)
        # counts too large to pack into one integer: the rows themselves are compared
        big = [VoteObservation(o.accepts + 2**31, o.votes + 2**31, o.valid, o.first) for o in obs]
        _same_rows(VoteColumns.from_observations(big), big)
        transitions = [(random.Random(seed + i).random() < 0.5, i % 3 == 0) for i in range(50)]
        a = calibrate(obs, transitions, n_boot=20, seed=seed)
        b = calibrate_columns(
            VoteColumns.of(cols.accepts, cols.votes, cols.lab, cols.first, cols.loop),
            transition_codes(transitions),
            n_boot=20,
            seed=seed,
        )
        assert repr(a.to_dict()) == repr(b.to_dict()) and a.samples == b.samples
        assert a.transition_counts == transition_rates(transitions)[2]


def test_tally_calibrates_as_the_observations_to_the_last_bit(monkeypatch):
    """A run's calibration tallies its loops (auditor.runs.calibration): the parameters,
    intervals and bootstrap samples equal `calibrate`'s of the same observations and the
    per-loop form's, with the bootstrap's picks drawn a few at a time (DRAW_PART) or at once;
    a group without votes too."""
    import policies.vrr.calibration as vc

    for seed, part in ((0, 7), (1, 1), (2, vc.DRAW_PART)):
        obs = observations(seed, 500, 40) + [VoteObservation(0, 0, None, False, 3)]
        rnd = random.Random(seed)
        transitions = [(rnd.random() < 0.4, rnd.random() < 0.6) for _ in range(60)]
        # min_evidence=1: the per-loop oracle has no evidence minimum (`policies.vrr.evidence`)
        whole = calibrate(obs, transitions, n_boot=12, seed=seed, min_evidence=1)
        monkeypatch.setattr(vc, "DRAW_PART", part)
        tally = vc.VoteTally.of_observations(obs, transitions)
        got = tally.calibrate(n_boot=12, seed=seed, min_evidence=1)
        assert len(tally) == len(obs) and got.n_observations == len(obs) - 1
        assert repr(got.to_dict()) == repr(whole.to_dict()) and got.samples == whole.samples
        oracle = per_loop_samples(obs[:-1], transitions, 12, seed)  # with votes only
        assert same(as_tuples(got.samples), oracle)
        monkeypatch.undo()
    none = vc.VoteTally.of_observations([VoteObservation(0, 0)], [(True, False)])
    want = calibrate([VoteObservation(0, 0)], [(True, False)], n_boot=3)
    assert len(none) == 1 and repr(none.calibrate(n_boot=3).to_dict()) == repr(want.to_dict())


def test_bootstrap_picks_drawn_in_parts_are_the_picks_drawn_at_once():
    """What DRAW_PART relies on: numpy's bounded integers drawn in parts are the same numbers,
    and leave the generator in the same state, as one draw of them all."""
    for n in (1, 2, 3, 999, 70_001):
        for part in (1, 3, 4096):
            a, b = np.random.default_rng(5), np.random.default_rng(5)
            whole = a.integers(0, n, n)
            parts = [b.integers(0, n, min(part, n - s)) for s in range(0, n, part)]
            assert (np.concatenate(parts) == whole).all()
            assert a.integers(0, 2**40) == b.integers(0, 2**40)


def _loop(rnd: random.Random, rounds: int) -> list[VoteObservation]:
    out = []
    for k in range(rounds):
        votes = rnd.randint(1, 5)
        valid = rnd.choice([None, True, False])
        out.append(VoteObservation(rnd.randint(0, votes), votes, valid, k == 0))
    return out


def test_tallied_calibration_memory_grows_by_bytes_per_loop():
    """A 10⁵-trace run's calibration kept its 600,000 observations as columns (40
    bytes each) and sorted them (as much again): its peak grew ~70 MB per 10⁵ traces. Tallied,
    a loop costs 12 bytes per distinct row in it and a transition a byte. 10⁴ loops of 12
    rounds: the columns' way peaks at ~12 MB, the tally's at ~3 MB."""
    import tracemalloc
    from array import array

    from policies.vrr.calibration import VoteTally

    def columns_way(loops: int) -> None:  # the run's calibration as it was
        rnd = random.Random(0)
        cols = [array("d") for _ in range(4)]
        loop, codes = array("q"), array("q")
        for li in range(loops):
            for o in _loop(rnd, 12):
                lab = math.nan if o.valid is None else float(o.valid)
                for c, v in zip(cols, (o.accepts, o.votes, lab, float(o.first)), strict=True):
                    c.append(v)
                loop.append(li)
            codes.extend(rnd.randrange(4) for _ in range(11))
        calibrate_columns(VoteColumns.of(*cols, loop), np.asarray(codes, np.int64), n_boot=2)

    def tally_way(loops: int) -> None:
        rnd = random.Random(0)
        tally = VoteTally()
        for _ in range(loops):
            tally.add(_loop(rnd, 12), [(rnd.random() < 0.5, rnd.random() < 0.5)] * 11)
        tally.calibrate(n_boot=2)

    peaks = {}
    for way in (columns_way, tally_way):
        tracemalloc.start()
        way(10_000)
        peaks[way.__name__] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    assert peaks["columns_way"] > 10 and peaks["tally_way"] < 5, peaks
