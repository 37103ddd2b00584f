"""Calibration of the VRR noise parameters from uploaded data (SPEC §5.3; Wu et al. §2.2:
"weak supervision: repeated verification votes and a small number of labelled transitions").

- ρ0, ρ1 and the prior from repeated votes: a two-component binomial mixture fitted by EM.
  Observations with a validity label enter with a fixed responsibility (their exact counts).
  With n votes per candidate the mixture is identifiable only for n ≥ 3.
- α, β from labelled transitions (validity before / after one repair), maximum likelihood.
- Percentile bootstrap intervals (resampling loops, seeded); the draws double as the
  "bootstrap region" of the sign-identifiability check. α and β get exact Clopper–Pearson
  intervals and count as identified only from ``min_evidence`` transitions out of their state
  (`policies.vrr.evidence`). With fewer than 3 votes per candidate ρ0 and ρ1 rest on the
  labelled candidates alone, and the same rule holds for them: exact intervals of the labelled
  candidates' votes, identified only from ``min_evidence`` labelled candidates of their state.

numpy is used here because bootstrap refits are the one hot loop that pure Python makes slow.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..trace import Trace
from .evidence import (
    MIN_TRANSITIONS,
    clopper_pearson,
    not_identified_note,
    rate_identified,
    rho_not_identified_note,
)
from .loops import loop_rounds
from .rule import VrrParams

FloatArray = npt.NDArray[np.float64]
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class EmFit:
    rho0: float
    rho1: float
    prior_first: float  # validity rate of round-0 candidates (the filter's b₀⁻)
    prior_all: float  # validity rate over all candidates
    loglik: float
    iterations: int
    converged: bool


def _fit(
    s: FloatArray,
    n: FloatArray,
    w: FloatArray,
    lab: FloatArray,
    first: FloatArray,
    *,
    p1: float = 0.8,
    p0: float = 0.2,
    pi: float = 0.5,
    max_iter: int = 500,
    tol: float = 1e-10,
) -> EmFit:
    """Weighted EM on distinct (S, n, label, is-first) rows. ``lab`` is 1/0 for a labelled row
    and NaN for an unlabelled one."""
    known = ~np.isnan(lab)
    lab_fixed = np.where(known, lab, 0.0)
    ll_old = -math.inf
    ll = -math.inf
    it = 0
    converged = False
    for it in range(1, max_iter + 1):  # noqa: B007 - iteration count is reported
        p1c = min(max(p1, _EPS), 1 - _EPS)
        p0c = min(max(p0, _EPS), 1 - _EPS)
        pic = min(max(pi, _EPS), 1 - _EPS)
        l1 = math.log(pic) + s * math.log(p1c) + (n - s) * math.log1p(-p1c)
        l0 = math.log1p(-pic) + s * math.log(p0c) + (n - s) * math.log1p(-p0c)
        m = np.maximum(l1, l0)
        norm = m + np.log(np.exp(l1 - m) + np.exp(l0 - m))
        r = np.exp(l1 - norm)
        r = np.where(known, lab_fixed, r)
        ll = float(np.sum(w * np.where(known, np.where(lab_fixed > 0, l1, l0), norm)))
        wr = w * r
        wq = w * (1 - r)
        pi = float(wr.sum() / max(w.sum(), _EPS))
        p1 = float((wr * s).sum() / max((wr * n).sum(), _EPS))
        p0 = float((wq * s).sum() / max((wq * n).sum(), _EPS))
        if abs(ll - ll_old) < tol:
            converged = True
            break
        ll_old = ll
    if p1 < p0 and not known.any():  # label switching: "valid" is the more-accepted component
        p1, p0, pi = p0, p1, 1 - pi
        r = 1 - r
    wf = w * first
    prior_first = float((wf * r).sum() / wf.sum()) if wf.sum() > 0 else pi
    return EmFit(
        rho0=p0,
        rho1=1 - p1,
        prior_first=prior_first,
        prior_all=pi,
        loglik=ll,
        iterations=it,
        converged=converged,
    )


@dataclass(frozen=True, slots=True)
class VoteObservation:
    """One verified candidate: S accepts of n votes; ``valid`` when labelled; ``first`` for
    round-0 candidates; ``loop`` groups observations for the bootstrap."""

    accepts: int
    votes: int
    valid: bool | None = None
    first: bool = False
    loop: int = 0


@dataclass(frozen=True, slots=True)
class VoteColumns:
    """Vote observations as columns, one entry per observation: ``lab`` is the validity label
    as 1.0 / 0.0 (NaN unlabelled), ``first`` 1.0 for round-0 candidates. What the calibration
    reads of them in 33 bytes each instead of an object (a 10⁵-trace run has ~600,000)."""

    accepts: FloatArray
    votes: FloatArray
    lab: FloatArray
    first: FloatArray
    loop: npt.NDArray[np.int64]

    @classmethod
    def from_observations(cls, obs: Sequence[VoteObservation]) -> VoteColumns:
        n = len(obs)
        return cls(
            np.fromiter((o.accepts for o in obs), np.float64, n),
            np.fromiter((o.votes for o in obs), np.float64, n),
            np.fromiter((math.nan if o.valid is None else float(o.valid) for o in obs), float, n),
            np.fromiter((1.0 if o.first else 0.0 for o in obs), np.float64, n),
            np.fromiter((o.loop for o in obs), np.int64, n),
        )

    @classmethod
    def of(cls, accepts: Any, votes: Any, lab: Any, first: Any, loop: Any) -> VoteColumns:
        """Columns from buffers (``array.array('d')`` ×4 and ``array('q')``, say)."""
        f = np.float64
        return cls(
            np.asarray(accepts, f),
            np.asarray(votes, f),
            np.asarray(lab, f),
            np.asarray(first, f),
            np.asarray(loop, np.int64),
        )

    def __len__(self) -> int:
        return len(self.votes)

    def informative(self) -> VoteColumns:
        """The observations with votes (zero-vote rows carry no information)."""
        keep = self.votes > 0
        if keep.all():
            return self
        return VoteColumns(
            self.accepts[keep], self.votes[keep], self.lab[keep], self.first[keep], self.loop[keep]
        )


def transition_codes(pairs: Sequence[tuple[bool, bool]]) -> npt.NDArray[np.int64]:
    """Labelled transitions as codes 0..3 = "00", "01", "10", "11" (before, after)."""
    return np.fromiter((int(a) * 2 + int(b) for a, b in pairs), np.int64, len(pairs))


def _distinct_rows(cols: VoteColumns) -> tuple[FloatArray, npt.NDArray[np.int64]]:
    """The distinct (accepts, votes, lab, first) rows in order of first occurrence and each
    observation's row index — the rows and order the per-object form gave (a test keeps it as
    its oracle), so every fit sums the same numbers in the same order."""
    lab = np.where(np.isnan(cols.lab), -1.0, cols.lab)  # NaN != NaN: unlabelled rows as -1
    keys = _packed_keys(cols, lab)
    if keys is None:  # not small whole numbers: compare the rows themselves
        _, first_at, inverse = np.unique(
            np.column_stack((cols.accepts, cols.votes, lab, cols.first)),
            axis=0,
            return_index=True,
            return_inverse=True,
        )
    else:
        _, first_at, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first_at, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    at = first_at[order]
    rows = np.column_stack((cols.accepts[at], cols.votes[at], cols.lab[at], cols.first[at]))
    return rows, rank[inverse.reshape(-1)]


def _packed_keys(cols: VoteColumns, lab: FloatArray) -> npt.NDArray[np.int64] | None:
    """Each row as one integer, when its counts are small whole numbers and its label and
    first flag 0/1 (always, from traces): a sort of 8-byte keys instead of 32-byte rows."""
    a, v = cols.accepts, cols.votes
    if not len(a) or min(a.min(), v.min()) < 0:
        return None
    top = max(a.max(), v.max()) + 1
    if top * top * 6 >= 2.0**62 or (a % 1).any() or (v % 1).any():
        return None
    if not np.isin(lab, (-1.0, 0.0, 1.0)).all() or not np.isin(cols.first, (0.0, 1.0)).all():
        return None
    k = int(top)
    packed = (a.astype(np.int64) * k + v.astype(np.int64)) * 3 + (lab + 1).astype(np.int64)
    return packed * 2 + cols.first.astype(np.int64)


def em_calibrate(obs: Sequence[VoteObservation], **kwargs: Any) -> EmFit:
    """Fit ρ0, ρ1 and the prior by EM (see module docstring). Zero-vote rows carry no
    information and are ignored; with no informative rows the result is NaN."""
    return _em_columns(VoteColumns.from_observations(obs).informative(), **kwargs)


def _em_columns(cols: VoteColumns, **kwargs: Any) -> EmFit:
    if not len(cols):
        return EmFit(math.nan, math.nan, math.nan, math.nan, math.nan, 0, False)
    arr, index = _distinct_rows(cols)
    w = np.bincount(index, minlength=len(arr)).astype(np.float64)
    return _fit(arr[:, 0], arr[:, 1], w, arr[:, 2], arr[:, 3], **kwargs)


def transition_rates(pairs: Sequence[tuple[bool, bool]]) -> tuple[float, float, dict[str, int]]:
    """α = #(invalid → valid) / #(invalid → ·), β = #(valid → invalid) / #(valid → ·); NaN
    when a denominator is zero."""
    c = {"00": 0, "01": 0, "10": 0, "11": 0}
    for before, after in pairs:
        c[f"{int(before)}{int(after)}"] += 1
    inv, val = c["00"] + c["01"], c["10"] + c["11"]
    alpha = c["01"] / inv if inv else math.nan
    beta = c["10"] / val if val else math.nan
    return alpha, beta, c


@dataclass(frozen=True, slots=True)
class Calibration:
    params: VrrParams
    intervals: dict[str, tuple[float, float]]
    samples: tuple[VrrParams, ...]
    em: EmFit
    transition_counts: dict[str, int]
    n_observations: int
    level: float
    n_boot: int
    seed: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "params": self.params.to_dict(),
            "j": self.params.j,
            "intervals": {k: list(v) for k, v in self.intervals.items()},
            "em": {
                "loglik": self.em.loglik,
                "iterations": self.em.iterations,
                "converged": self.em.converged,
            },
            "transition_counts": dict(self.transition_counts),
            "n_observations": self.n_observations,
            "level": self.level,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "notes": list(self.notes),
        }


def calibrate(
    obs: Sequence[VoteObservation],
    transitions: Sequence[tuple[bool, bool]],
    *,
    n_boot: int = 200,
    level: float = 0.95,
    seed: int = 0,
    min_evidence: int = MIN_TRANSITIONS,
) -> Calibration:
    """Point estimates and intervals of (ρ0, ρ1, α, β, prior): percentile bootstrap, exact
    Clopper–Pearson for α and β, identified from ``min_evidence`` transitions each
    (`policies.vrr.evidence`)."""
    return calibrate_columns(
        VoteColumns.from_observations(obs),
        transition_codes(transitions),
        n_boot=n_boot,
        level=level,
        seed=seed,
        min_evidence=min_evidence,
    )


def calibrate_columns(
    columns: VoteColumns,
    codes: npt.NDArray[np.int64],
    *,
    n_boot: int = 200,
    level: float = 0.95,
    seed: int = 0,
    min_evidence: int = MIN_TRANSITIONS,
) -> Calibration:
    """`calibrate` of observations as columns and transitions as codes (`transition_codes`)."""
    obs = columns.informative()
    if not len(obs):
        return _calibrated(
            _Rows.empty(), codes, n_boot=n_boot, level=level, seed=seed, min_evidence=min_evidence
        )
    arr, idx = _distinct_rows(obs)
    _, loop_of = np.unique(obs.loop, return_inverse=True)
    loop_of = loop_of.reshape(-1)

    def weights(drawn: FloatArray) -> FloatArray:
        # A row's weight is how often its loop was drawn: the same integer counts as
        # concatenating the drawn loops' members, without a Python loop over loops.
        return np.bincount(idx, weights=drawn[loop_of], minlength=len(arr))

    counts = np.bincount(idx, minlength=len(arr)).astype(np.float64)
    rows = _Rows(arr, counts, len(obs), float(obs.votes.max()), int(loop_of.max()) + 1, weights)
    return _calibrated(
        rows, codes, n_boot=n_boot, level=level, seed=seed, min_evidence=min_evidence
    )


@dataclass(frozen=True, slots=True)
class _Rows:
    """What a calibration reads of a group's informative observations: the distinct (accepts,
    votes, lab, first) rows in order of first occurrence (`_distinct_rows`), how many
    observations have each, their number and largest vote count, the number of loops, and
    ``weights(drawn)``: each row's count when each loop counts as often as ``drawn`` says."""

    arr: FloatArray
    counts: FloatArray
    n: int
    max_votes: float
    n_loops: int
    weights: Callable[[FloatArray], FloatArray]

    @classmethod
    def empty(cls) -> _Rows:
        return cls(np.empty((0, 4)), np.empty(0), 0, 0.0, 0, lambda drawn: drawn)


#: Bootstrap picks drawn at a time (`_drawn_counts`): a draw of 10⁵ loops or 6·10⁵ transitions
#: as one array was 0.8–4.8 MB more at the calibration's peak for each tenfold of the run.
DRAW_PART = 1 << 16


def _drawn_counts(rng: np.random.Generator, n: int, minlength: int, pick: Any = None) -> Any:
    """How often a bootstrap draw of ``n`` from ``n`` (``rng.integers(0, n, n)``) picks each
    index — or, with ``pick``, each value of ``pick`` at the drawn indices — drawn a part at a
    time. The same numbers as one call: numpy's bounded integers below 2³² take each 32-bit
    draw from the generator's own state (no buffer is left behind between calls; a test
    pins it)."""
    counts = np.zeros(minlength, np.int64)
    for start in range(0, n, DRAW_PART):
        drawn = rng.integers(0, n, min(DRAW_PART, n - start))
        counts += np.bincount(drawn if pick is None else pick[drawn], minlength=minlength)
    return counts


def _calibrated(
    rows: _Rows, codes: Any, *, n_boot: int, level: float, seed: int, min_evidence: int
) -> Calibration:
    """Point estimates and percentile-bootstrap intervals from a group's rows and transition
    codes (`calibrate_columns`, `VoteTally.calibrate`)."""
    notes: list[str] = []
    if rows.n and rows.max_votes < 3:
        notes.append(
            "fewer than 3 votes per candidate: the mixture is identifiable only "
            "through the labelled candidates"
        )
    transitions = len(codes)
    if not transitions:
        notes.append("no labelled transitions: alpha and beta are not identified")
    arr = rows.arr
    if rows.n:
        em = _fit(arr[:, 0], arr[:, 1], rows.counts, arr[:, 2], arr[:, 3])
    else:
        em = EmFit(math.nan, math.nan, math.nan, math.nan, math.nan, 0, False)
    alpha, beta, counts = _counted_rates(codes)
    if transitions and counts["10"] + counts["11"] == 0:
        notes.append(
            "beta not identified: no labelled repair of a valid candidate (loops that stop "
            "once the verifier accepts never repair one)"
        )
    if transitions and counts["00"] + counts["01"] == 0:
        notes.append("alpha not identified: no labelled repair of an invalid candidate")
    from_invalid, from_valid = counts["00"] + counts["01"], counts["10"] + counts["11"]
    alpha_ok = rate_identified(from_invalid, min_evidence)
    beta_ok = rate_identified(from_valid, min_evidence)
    if from_invalid and not alpha_ok:
        notes.append(not_identified_note("alpha", from_invalid, "an invalid", min_evidence))
        alpha = math.nan
    if from_valid and not beta_ok:
        notes.append(not_identified_note("beta", from_valid, "a valid", min_evidence))
        beta = math.nan
    rho0, rho1 = em.rho0, em.rho1
    rho_intervals: dict[str, tuple[float, float]] = {}
    if rows.n and rows.max_votes < 3:
        # only the labelled candidates tell ρ0 and ρ1 (the one-vote mixture cannot): their
        # proportion, its exact interval, and a stated minimum of them
        for name, (cands, k, trials) in labelled_vote_counts(arr, rows.counts).items():
            rho_intervals[name] = clopper_pearson(k, trials, level)
            value = k / trials if rate_identified(cands, min_evidence) else math.nan
            if math.isnan(value):
                notes.append(rho_not_identified_note(name, cands, min_evidence))
            rho0, rho1 = (value, rho1) if name == "rho0" else (rho0, value)
    point = VrrParams(rho0, rho1, alpha, beta, em.prior_first)
    rng = np.random.default_rng(seed)
    samples: list[VrrParams] = []
    if rows.n:
        for _ in range(n_boot):
            drawn = _drawn_counts(rng, rows.n_loops, rows.n_loops).astype(np.float64)
            fit = _fit(
                arr[:, 0],
                arr[:, 1],
                rows.weights(drawn),
                arr[:, 2],
                arr[:, 3],
                p1=1 - em.rho1,
                p0=em.rho0,
                pi=em.prior_all,
                max_iter=100,
                tol=1e-8,
            )
            if len(codes):
                a_, b_, _ = _rates_of(_drawn_counts(rng, len(codes), 4, codes))
            else:
                a_, b_ = math.nan, math.nan
            samples.append(
                VrrParams(
                    fit.rho0 if not math.isnan(rho0) else math.nan,
                    fit.rho1 if not math.isnan(rho1) else math.nan,
                    a_ if alpha_ok else math.nan,
                    b_ if beta_ok else math.nan,
                    fit.prior_first,
                )
            )
    tail = (1 - level) / 2
    intervals: dict[str, tuple[float, float]] = {}
    for name in ("rho0", "rho1", "alpha", "beta", "prior"):
        vals = np.array([getattr(s, name) for s in samples], dtype=np.float64)
        vals = vals[~np.isnan(vals)]
        if len(vals):
            intervals[name] = (float(np.quantile(vals, tail)), float(np.quantile(vals, 1 - tail)))
        else:
            intervals[name] = (math.nan, math.nan)
    # α and β: exact intervals of their counts (a bootstrap of a few transitions is [0, 0])
    intervals["alpha"] = clopper_pearson(counts["01"], from_invalid, level)
    intervals["beta"] = clopper_pearson(counts["10"], from_valid, level)
    intervals.update(rho_intervals)  # likewise ρ0, ρ1 when only labels identify them
    return Calibration(
        point, intervals, tuple(samples), em, counts, rows.n, level, n_boot, seed, notes
    )


class VoteTally:
    """A (model, verifier) group's vote observations and labelled transitions, gathered a loop
    (trace) at a time and kept as what the calibration reads of them: each distinct
    row with its count, each loop as its (row, count) pairs and each transition as a byte, in
    flat arrays. A 10⁵-trace run's 600,000 observations as columns (`VoteColumns`) were ~30 MB
    and their sort at calibration as much again; tallied, ~2 MB (the bench's loops have ~6
    distinct rows of their ~24). `calibrate` gives `calibrate`'s result to the last bit: the
    rows come in the same order, and a bootstrap weight is a sum of whole numbers, exact in
    any order.

    Counts are whole numbers (``loop_rounds``' are): rows are told apart by their values."""

    def __init__(self) -> None:
        self._rows: dict[tuple[float, float, float, float], int] = {}
        self._counts: list[int] = []  # per distinct row
        # per (loop, distinct row of the loop), for loops with votes (numbered from 0)
        self._pair_loop, self._pair_row, self._pair_count = (array("i") for _ in range(3))
        self._loops = 0
        self._codes = array("b")  # transitions, as `transition_codes`
        self.observations = 0  # all, as `len(VoteColumns)`
        self._informative = 0  # those with votes
        self._max_votes = 0.0

    @classmethod
    def of_observations(
        cls, obs: Sequence[VoteObservation], transitions: Sequence[tuple[bool, bool]]
    ) -> VoteTally:
        """The tally of observations in any order of loops: rows in their order of first
        occurrence, loops in the order of their ``loop`` values (as `calibrate` reads them)."""
        tally = cls()
        loops: dict[int, list[VoteObservation]] = {}
        for o in obs:
            if o.votes > 0:
                tally._row(o)
            loops.setdefault(o.loop, []).append(o)
        for loop in sorted(loops):
            tally.add(loops[loop], ())
        tally._codes.extend(transition_codes(transitions).tolist())
        return tally

    def add_trace(self, trace: Trace) -> None:
        """The next loop: a trace's rounds, as `observations_from_traces` reads them."""
        self.add(*observations_from_traces([trace]))

    def add(self, obs: Sequence[VoteObservation], transitions: Sequence[tuple[bool, bool]]) -> None:
        """The next loop's observations (their ``loop`` is not read) and labelled transitions."""
        members: dict[int, int] = {}
        self.observations += len(obs)
        for o in obs:
            if o.votes > 0:  # zero-vote rows carry no information (`VoteColumns.informative`)
                row = self._row(o)
                members[row] = members.get(row, 0) + 1
                self._counts[row] += 1
                self._max_votes = max(self._max_votes, float(o.votes))
        if members:
            self._informative += sum(members.values())
            self._pair_loop.extend([self._loops] * len(members))
            self._pair_row.extend(members)
            self._pair_count.extend(members.values())
            self._loops += 1
        self._codes.extend(int(a) * 2 + int(b) for a, b in transitions)

    def _row(self, o: VoteObservation) -> int:
        lab = -1.0 if o.valid is None else float(o.valid)
        key = (float(o.accepts), float(o.votes), lab, 1.0 if o.first else 0.0)
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = len(self._rows)
            self._counts.append(0)
        return row

    def __len__(self) -> int:
        return self.observations

    def calibrate(
        self,
        *,
        n_boot: int = 200,
        level: float = 0.95,
        seed: int = 0,
        min_evidence: int = MIN_TRANSITIONS,
    ) -> Calibration:
        """`calibrate` of the tallied observations and transitions."""
        codes = np.frombuffer(self._codes, dtype=np.int8) if self._codes else np.empty(0, np.int8)
        if not self._informative:
            return _calibrated(
                _Rows.empty(),
                codes,
                n_boot=n_boot,
                level=level,
                seed=seed,
                min_evidence=min_evidence,
            )
        arr = np.array(
            [(a, v, math.nan if lab < 0 else lab, f) for a, v, lab, f in self._rows],
            dtype=np.float64,
        )
        loop_at, row_at, times = (
            np.frombuffer(a, dtype=np.int32)
            for a in (self._pair_loop, self._pair_row, self._pair_count)
        )
        n_rows = len(arr)

        def weights(drawn: FloatArray) -> FloatArray:
            return np.bincount(row_at, weights=drawn[loop_at] * times, minlength=n_rows)

        counts = np.asarray(self._counts, np.float64)
        rows = _Rows(arr, counts, self._informative, self._max_votes, self._loops, weights)
        return _calibrated(
            rows, codes, n_boot=n_boot, level=level, seed=seed, min_evidence=min_evidence
        )


def labelled_vote_counts(arr: FloatArray, counts: FloatArray) -> dict[str, tuple[int, int, int]]:
    """What the labelled candidates say of the verifier's error rates, from distinct (accepts,
    votes, lab, first) rows and how many observations have each: for ``rho0`` (accepting an
    invalid candidate) the labelled invalid candidates with votes, their accepts and their
    votes; for ``rho1`` (rejecting a valid one) the labelled valid candidates with votes, their
    rejects and their votes."""
    accepts, votes, lab = arr[:, 0], arr[:, 1], arr[:, 2]
    out: dict[str, tuple[int, int, int]] = {}
    for name, state in (("rho0", 0.0), ("rho1", 1.0)):
        w = np.where((lab == state) & (votes > 0), counts, 0.0)
        hits = accepts if state == 0.0 else votes - accepts
        out[name] = (int(w.sum()), int((w * hits).sum()), int((w * votes).sum()))
    return out


def _counted_rates(codes: Any) -> tuple[float, float, dict[str, int]]:
    """`transition_rates` of transition codes, with its counts."""
    return _rates_of(np.bincount(codes, minlength=4))


def _rates_of(bins: Any) -> tuple[float, float, dict[str, int]]:
    """`transition_rates` of the transitions' counts per code."""
    c00, c01, c10, c11 = (int(x) for x in bins)
    c = {"00": c00, "01": c01, "10": c10, "11": c11}
    inv, val = c00 + c01, c10 + c11
    return (c01 / inv if inv else math.nan), (c10 / val if val else math.nan), c


def observations_from_traces(
    traces: Sequence[Trace],
) -> tuple[list[VoteObservation], list[tuple[bool, bool]]]:
    """Vote observations and labelled transitions of a (model, verifier) group of traces."""
    obs: list[VoteObservation] = []
    transitions: list[tuple[bool, bool]] = []
    for li, t in enumerate(traces):
        rounds = loop_rounds(t)
        for k, r in enumerate(rounds):
            obs.append(VoteObservation(r.accepts, r.votes, r.valid, k == 0, li))
            if k and rounds[k - 1].valid is not None and r.valid is not None:
                transitions.append((bool(rounds[k - 1].valid), bool(r.valid)))
    return obs, transitions
