"""VRR-Stop and VRR-Guard for noisy verify-repair loops (SPEC §5.3; Wu et al. 2026,
"Verify, Repair, Repeat, or Stop?", §2.1–2.3).

Noise model: ρ0 = P(accept | invalid), ρ1 = P(reject | valid), α = P(invalid → valid by one
repair), β = P(valid → invalid by one repair), J = 1 − ρ0 − ρ1.

A loop is a list of `Round`s: round k's candidate and the verifier's S_k accepts of n_k votes.
Round 0 is the initial candidate; round k+1's candidate is one repair of round k's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .evidence import MIN_TRANSITIONS


@dataclass(frozen=True, slots=True)
class VrrParams:
    """The four noise parameters and the prior b₀⁻ (initial validity rate)."""

    rho0: float
    rho1: float
    alpha: float
    beta: float
    prior: float

    @property
    def j(self) -> float:
        """Verifier discrimination J = 1 − ρ0 − ρ1 (§2.1)."""
        return 1.0 - self.rho0 - self.rho1

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VrrParams:
        """Inverse of `to_dict`; null (how JSON stores an unidentified NaN) reads as NaN."""

        def num(key: str) -> float:
            v = d.get(key)
            return math.nan if v is None else float(v)

        return cls(
            rho0=num("rho0"),
            rho1=num("rho1"),
            alpha=num("alpha"),
            beta=num("beta"),
            prior=num("prior"),
        )


@dataclass(frozen=True, slots=True)
class VrrSettings:
    """Settings of VRR (SPEC §5.3). ``params`` are the calibrated noise parameters of the
    (model, verifier) group and ``samples`` their bootstrap draws (sign-identifiability check).

    ``tau`` = 0 is the paper's cost threshold. The paper gives no numbers for the rest; these
    are this project's choices, documented in docs/policies.md:

    - ``j_min``: below it the verifier cannot discriminate and VRR falls back to Guard (§2.3).
      Missing parameters never trigger the fallback: the loop is then *not applicable*
      ("parameters not identified: …").
    - ``delta_fraction``: Guard's margin δ scaled to the number of votes, δ(n) = max(1,
      ⌈fraction·n⌉): 0.5, a replacement must gain half the votes (δ = 3 at 5 votes, 1 for a
      single test, 3 at 6 — so a repair passing 3 of 6 tests replaces an incumbent passing
      none, which 0.6's δ = 4 forbade); ``delta`` fixes δ instead (then capped at n).
    - ``unanimous_replaces``: a round every vote accepts replaces an incumbent that some vote
      rejected, even when the scaled margin cannot be met (with δ = 3 and 4 votes a fully
      passing repair could otherwise never replace a 3/4 incumbent).
    - ``sign_stability``: share of bootstrap draws that must give the point estimate's stop
      round for VRR-Stop to be trusted (else Guard: the sign is not identifiable).
    - ``min_evidence``: the least number of labelled transitions out of a state for α or β (and
      of labelled candidates of a state for ρ0 or ρ1, when only labels identify them) to
      be identified when the run calibrates them (`policies.vrr.evidence`: 20, why there).
    - ``rate_lower`` / ``rate_upper``: the exact intervals of α and β from the calibration; a
      rate that is not identified is searched over its interval instead of [0, 1]
      (`stop_round_without`).
    - ``beyond_recorded``: when VRR-Stop's gain stays above τ through every recorded round the
      rule would repair further; ``"unknown"`` reports the guarded outcome unknown (needs a live
      continuation), ``"ship_last"`` ships the last recorded round.
    """

    tau: float = 0.0
    j_min: float = 0.1
    delta_fraction: float = 0.5
    delta: int | None = None
    unanimous_replaces: bool = True
    sign_stability: float = 0.95
    mode: Literal["auto", "stop", "guard"] = "auto"
    beyond_recorded: Literal["unknown", "ship_last"] = "unknown"
    min_evidence: int = MIN_TRANSITIONS
    params: VrrParams | None = None
    samples: tuple[VrrParams, ...] = field(default=())
    rate_lower: VrrParams | None = None  # exact interval of α, β (`policies.vrr.evidence`)
    rate_upper: VrrParams | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tau": self.tau,
            "j_min": self.j_min,
            "delta_fraction": self.delta_fraction,
            "delta": self.delta,
            "unanimous_replaces": self.unanimous_replaces,
            "sign_stability": self.sign_stability,
            "mode": self.mode,
            "beyond_recorded": self.beyond_recorded,
            "min_evidence": self.min_evidence,
            "params": self.params.to_dict() if self.params else None,
            "n_samples": len(self.samples),
            "rate_lower": self.rate_lower.to_dict() if self.rate_lower else None,
            "rate_upper": self.rate_upper.to_dict() if self.rate_upper else None,
        }

    def rate_bounds(self) -> dict[str, tuple[float, float]]:
        """The exact intervals of α and β the calibration gave, where both ends are known."""
        out: dict[str, tuple[float, float]] = {}
        if self.rate_lower is None or self.rate_upper is None:
            return out
        for name in ("alpha", "beta"):
            lo, hi = getattr(self.rate_lower, name), getattr(self.rate_upper, name)
            if math.isfinite(lo) and math.isfinite(hi) and 0.0 <= lo <= hi <= 1.0:
                out[name] = (lo, hi)
        return out


@dataclass(frozen=True, slots=True)
class Round:
    round: int
    accepts: int
    votes: int
    candidate_id: str = ""
    valid: bool | None = None  # ground truth when labelled
    event_index: int = -1  # the candidate's position in its trace, when from a trace


def _log_lik(accepts: int, votes: int, p: float) -> float:
    """log of p^S (1−p)^(n−S) (the binomial coefficient cancels in the posterior)."""
    if votes == 0:
        return 0.0
    ll = 0.0
    if accepts:
        ll += accepts * math.log(p) if p > 0.0 else -math.inf
    if votes - accepts:
        ll += (votes - accepts) * math.log1p(-p) if p < 1.0 else -math.inf
    return ll


def belief_update(prior: float, accepts: int, votes: int, rho0: float, rho1: float) -> float:
    """Posterior validity after S accepts of n votes (§2.2 update step): likelihood
    Binom(S; n, 1−ρ1) if valid, Binom(S; n, ρ0) if invalid. Zero votes leave the prior; a
    count impossible under both hypotheses (e.g. ρ0 = ρ1 = 0 and a split vote) does too."""
    if votes <= 0 or prior <= 0.0 or prior >= 1.0:
        return min(max(prior, 0.0), 1.0)
    l1 = _log_lik(accepts, votes, 1.0 - rho1)
    l0 = _log_lik(accepts, votes, rho0)
    if l1 == -math.inf and l0 == -math.inf:
        return prior
    if l1 == -math.inf:
        return 0.0
    if l0 == -math.inf:
        return 1.0
    # logistic form keeps it in [0, 1] and avoids underflow for large n
    logit = math.log(prior) - math.log1p(-prior) + l1 - l0
    if logit >= 0:
        return 1.0 / (1.0 + math.exp(-logit))
    e = math.exp(logit)
    return e / (1.0 + e)


def belief_predict(belief: float, alpha: float, beta: float) -> float:
    """Belief after one more repair: b⁻ₖ₊₁ = (1−β)·bₖ + α·(1−bₖ) (§2.2 predict step)."""
    return (1.0 - beta) * belief + alpha * (1.0 - belief)


def marginal_gain(belief: float, alpha: float, beta: float) -> float:
    """Expected change of true validity from one more repair: Gₖ = (1−bₖ)·α − bₖ·β (§2.2)."""
    return (1.0 - belief) * alpha - belief * beta


@dataclass(frozen=True, slots=True)
class StopResult:
    stop_round: int | None  # index into the rounds; None = the rule would repair past the data
    beliefs: tuple[float, ...]  # b_k, posterior after round k's votes
    priors: tuple[float, ...]  # b_k⁻, before round k's votes
    gains: tuple[float, ...]  # G_k


def stop_test(gain: float, tau: float) -> bool:
    """VRR-Stop's stopping condition (§2.2): stop at Gₖ ≤ τ."""
    return gain <= tau


def belief_filter(
    rounds: Sequence[Round], params: VrrParams
) -> Iterator[tuple[float, float, float]]:
    """(bₖ⁻, bₖ, Gₖ) for each round: predict from the previous round (the prior b₀⁻ first),
    update with round k's votes, and the marginal gain of one more repair (§2.2)."""
    b_minus = params.prior
    for r in rounds:
        b = belief_update(b_minus, r.accepts, r.votes, params.rho0, params.rho1)
        yield b_minus, b, marginal_gain(b, params.alpha, params.beta)
        b_minus = belief_predict(b, params.alpha, params.beta)


def stop_rule(rounds: Sequence[Round], params: VrrParams, tau: float = 0.0) -> StopResult:
    """VRR-Stop (§2.2): filter the belief through the rounds and stop at the first round that
    passes `stop_test`, committing that round's candidate. Rounds after the stop are still
    filtered (for the report's belief/gain chart) as if repair had gone on."""
    priors: list[float] = []
    beliefs: list[float] = []
    gains: list[float] = []
    stop: int | None = None
    for k, (b_minus, b, g) in enumerate(belief_filter(rounds, params)):
        priors.append(b_minus)
        beliefs.append(b)
        gains.append(g)
        if stop is None and stop_test(g, tau):
            stop = k
    return StopResult(stop, tuple(beliefs), tuple(priors), tuple(gains))


def first_stop(rounds: Sequence[Round], params: VrrParams, tau: float = 0.0) -> int | None:
    """`stop_rule`'s stop round only, without keeping the per-round series (hot path: the
    sign check runs it for every bootstrap draw of every loop — 15 % of an audit run's time
    when it went through `belief_filter`). The same arithmetic as `belief_update`,
    `marginal_gain` and `belief_predict`, operation for operation, written out in one loop with
    each draw's logarithms taken once; a property test holds it to `stop_rule`."""
    rho0, rho1, alpha, beta = params.rho0, params.rho1, params.alpha, params.beta
    p1 = 1.0 - rho1  # P(accept | valid)
    log_p1 = math.log(p1) if p1 > 0.0 else -math.inf
    log_q1 = math.log1p(-p1) if p1 < 1.0 else -math.inf
    log_p0 = math.log(rho0) if rho0 > 0.0 else -math.inf
    log_q0 = math.log1p(-rho0) if rho0 < 1.0 else -math.inf
    neg_inf = -math.inf
    b_minus = params.prior
    for k, r in enumerate(rounds):
        votes, accepts = r.votes, r.accepts
        if votes <= 0 or b_minus <= 0.0 or b_minus >= 1.0:
            b = min(max(b_minus, 0.0), 1.0)
        else:
            l1 = l0 = 0.0
            if accepts:
                l1 += accepts * log_p1 if p1 > 0.0 else neg_inf
                l0 += accepts * log_p0 if rho0 > 0.0 else neg_inf
            if votes - accepts:
                l1 += (votes - accepts) * log_q1 if p1 < 1.0 else neg_inf
                l0 += (votes - accepts) * log_q0 if rho0 < 1.0 else neg_inf
            if l1 == neg_inf and l0 == neg_inf:
                b = b_minus
            elif l1 == neg_inf:
                b = 0.0
            elif l0 == neg_inf:
                b = 1.0
            else:
                logit = math.log(b_minus) - math.log1p(-b_minus) + l1 - l0
                if logit >= 0:
                    b = 1.0 / (1.0 + math.exp(-logit))
                else:
                    e = math.exp(logit)
                    b = e / (1.0 + e)
        if (1.0 - b) * alpha - b * beta <= tau:
            return k
        b_minus = (1.0 - beta) * b + alpha * (1.0 - b)
    return None


def guard_margin(votes: int, incumbent_accepts: int, settings: VrrSettings) -> int:
    """Guard's margin δ for a round of ``votes`` votes against an incumbent with
    ``incumbent_accepts`` (see `VrrSettings`: scaled to the votes, capped at them, and at the
    incumbent's headroom when ``unanimous_replaces``)."""
    if settings.delta is not None:
        base = settings.delta
    else:
        base = max(1, math.ceil(settings.delta_fraction * votes - 1e-9))
    base = max(1, min(base, votes))
    if settings.unanimous_replaces and incumbent_accepts < votes:
        base = min(base, votes - incumbent_accepts)
    return base


def guard_rule(
    rounds: Sequence[Round], settings: VrrSettings
) -> tuple[int, tuple[int, ...], tuple[int | None, ...]]:
    """VRR-Guard (§2.3): keep an incumbent c (round 0); candidate pₖ replaces it only if
    S(pₖ) ≥ S(c) + δ, δ from `guard_margin`. Accept counts are compared as counts (the paper's
    S); rounds with no votes never replace. Returns the final incumbent's index, the incumbent
    after each round and the margin each round had to meet (None without votes)."""
    if not rounds:
        return 0, (), ()
    inc = 0
    history = [0]
    margins: list[int | None] = [None]
    for k in range(1, len(rounds)):
        r = rounds[k]
        if r.votes > 0:
            margin = guard_margin(r.votes, rounds[inc].accepts, settings)
            margins.append(margin)
            if r.accepts >= rounds[inc].accepts + margin:
                inc = k
        else:
            margins.append(None)
        history.append(inc)
    return inc, tuple(history), tuple(margins)


def stop_round_without(
    rounds: Sequence[Round],
    params: VrrParams,
    missing: Sequence[str],
    tau: float,
    steps: int = 21,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> tuple[bool, int | None]:
    """Use what is identified: when α and/or β (named in ``missing``) are not identified, try
    every value on a grid over [0, 1] for each — over its exact interval where ``bounds`` has
    one (too few transitions to identify the rate still bound it). (True, stop round) when
    every grid point gives the same stop round (None = repair past the data) — the decision
    does not depend on the missing parameter; (False, None) when it does. Preconditions: ρ0,
    ρ1 and the prior are identified; ``missing`` ⊆ {"alpha", "beta"}."""
    if not set(missing) <= {"alpha", "beta"}:
        raise ValueError(f"only alpha and beta can be searched, not {sorted(missing)}")

    def grid(name: str) -> list[float]:
        lo, hi = (bounds or {}).get(name, (0.0, 1.0))
        return [lo + (hi - lo) * i / (steps - 1) for i in range(steps)]

    alphas = grid("alpha") if "alpha" in missing else [params.alpha]
    betas = grid("beta") if "beta" in missing else [params.beta]
    seen: set[int | None] = set()
    for a in alphas:
        for b in betas:
            trial = VrrParams(params.rho0, params.rho1, a, b, params.prior)
            seen.add(first_stop(rounds, trial, tau))
            if len(seen) > 1:
                return False, None
    return True, next(iter(seen))


def unidentified(params: VrrParams | None) -> list[str]:
    """Names of the parameters that are not identified (NaN), all of them without params."""
    names = ["rho0", "rho1", "alpha", "beta", "prior"]
    if params is None:
        return names
    return [n for n in names if math.isnan(getattr(params, n))]


# The draws of the last samples seen: every loop of a run is checked against the same samples
# (one tuple on the run's settings), and sorting out the unusable draws again for each loop cost
# as much as the check.
_LAST_USABLE: tuple[Sequence[VrrParams] | None, list[VrrParams]] = (None, [])


def _usable_draws(samples: Sequence[VrrParams]) -> list[VrrParams]:
    global _LAST_USABLE
    seen, usable = _LAST_USABLE
    if seen is not samples:
        usable = [s for s in samples if not unidentified(s)]
        _LAST_USABLE = (samples, usable)
    return usable


def _agreeing(
    rounds: Sequence[Round], params: VrrParams, usable: Sequence[VrrParams], tau: float
) -> int:
    """How many of the ``usable`` draws give the point estimate's stop round."""
    point = first_stop(rounds, params, tau)
    return sum(1 for s in usable if first_stop(rounds, s, tau) == point)


class SignMemo:
    """`_agreeing` by a loop's rounds as `first_stop` reads them — (votes, accepts) each —
    for one (params, samples, tau); used with others it starts over. The check runs
    `first_stop` once per bootstrap draw (200 by default) and was nine tenths of VRR's time on
    real loops, which repeat few patterns: the 664 LDB loops of ../shared/data have 25. A
    `VrrPolicy` keeps one. At most ``limit`` patterns (≈ 2 MB at the default): a run of ever
    new patterns (the bench's synthetic loops are all distinct) empties it when full rather
    than growing a worker's memory with the run; 0 keeps nothing."""

    __slots__ = ("_key", "_agree", "limit")

    def __init__(self, limit: int = 4096) -> None:
        self._key: tuple[object, object, float] | None = None
        self._agree: dict[tuple[tuple[int, int], ...], int] = {}
        self.limit = limit

    def agreeing(
        self,
        rounds: Sequence[Round],
        params: VrrParams,
        samples: Sequence[VrrParams],
        usable: Sequence[VrrParams],
        tau: float,
    ) -> int:
        key = self._key
        if key is None or key[0] is not params or key[1] is not samples or key[2] != tau:
            self._key, self._agree = (params, samples, tau), {}
        pattern = tuple((r.votes, r.accepts) for r in rounds)
        agree = self._agree.get(pattern)
        if agree is None:
            agree = _agreeing(rounds, params, usable, tau)
            if self.limit > 0:
                if len(self._agree) >= self.limit:
                    self._agree.clear()
                self._agree[pattern] = agree
        return agree


def sign_identifiable(
    rounds: Sequence[Round],
    params: VrrParams,
    samples: Sequence[VrrParams],
    settings: VrrSettings,
    memo: SignMemo | None = None,
) -> tuple[bool, str, float | None]:
    """Sign-identifiability check (§2.2, §2.3): the stop decision rests on the signs of Gₖ, so
    it is trusted only if J ≥ ``j_min`` and the bootstrap draws give the point estimate's stop
    round in at least ``sign_stability`` of cases. Returns (ok, reason, agreement)."""
    if params.j < settings.j_min:
        return False, f"J = {params.j:.3f} < j_min = {settings.j_min}", None
    usable = _usable_draws(samples)  # a draw may miss a parameter
    if not usable:
        return True, "no usable bootstrap draws: J check only", None
    if memo is None:
        agree = _agreeing(rounds, params, usable, settings.tau)
    else:
        agree = memo.agreeing(rounds, params, samples, usable, settings.tau)
    agreement = agree / len(usable)
    if agreement < settings.sign_stability:
        return False, f"gain sign unstable: {agreement:.2f} of bootstrap draws agree", agreement
    return True, "gain sign stable across bootstrap draws", agreement
