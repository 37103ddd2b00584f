"""VRR-Stop and VRR-Guard for noisy verify-repair loops (SPEC §5.3; Wu et al. 2026,
"Verify, Repair, Repeat, or Stop?", §2.1–2.3).

Noise model: ρ0 = P(accept | invalid), ρ1 = P(reject | valid), α = P(invalid → valid by one
repair), β = P(valid → invalid by one repair), J = 1 − ρ0 − ρ1.

A loop is a list of `Round`s: round k's candidate and the verifier's S_k accepts of n_k votes.
Round 0 is the initial candidate; round k+1's candidate is one repair of round k's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal


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
    (model, verifier) group; without them the sign of the gain is not identifiable and the
    policy runs VRR-Guard (§2.3: Guard is the estimation-free fallback). ``samples`` are
    bootstrap draws of the parameters for the sign-identifiability check.

    ``tau`` = 0 is the paper's cost threshold. ``j_min``, ``delta`` and ``sign_stability`` are
    not given numerically in the paper; the values here are this project's choices."""

    tau: float = 0.0
    j_min: float = 0.1
    delta: int = 3
    sign_stability: float = 0.95
    mode: Literal["auto", "stop", "guard"] = "auto"
    params: VrrParams | None = None
    samples: tuple[VrrParams, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "tau": self.tau,
            "j_min": self.j_min,
            "delta": self.delta,
            "sign_stability": self.sign_stability,
            "mode": self.mode,
            "params": self.params.to_dict() if self.params else None,
            "n_samples": len(self.samples),
        }


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


def stop_rule(rounds: Sequence[Round], params: VrrParams, tau: float = 0.0) -> StopResult:
    """VRR-Stop (§2.2): filter the belief through the rounds and stop at the first round with
    Gₖ ≤ τ, committing that round's candidate. Rounds after the stop are still filtered (for
    the report's belief/gain chart) as if repair had gone on."""
    b_minus = params.prior
    beliefs: list[float] = []
    priors: list[float] = []
    gains: list[float] = []
    stop: int | None = None
    for k, r in enumerate(rounds):
        priors.append(b_minus)
        b = belief_update(b_minus, r.accepts, r.votes, params.rho0, params.rho1)
        g = marginal_gain(b, params.alpha, params.beta)
        beliefs.append(b)
        gains.append(g)
        if stop is None and g <= tau:
            stop = k
        b_minus = belief_predict(b, params.alpha, params.beta)
    return StopResult(stop, tuple(beliefs), tuple(priors), tuple(gains))


def first_stop(rounds: Sequence[Round], params: VrrParams, tau: float = 0.0) -> int | None:
    """`stop_rule`'s stop round only, without keeping the per-round series (hot path)."""
    b_minus = params.prior
    a, be, r0, r1 = params.alpha, params.beta, params.rho0, params.rho1
    for k, r in enumerate(rounds):
        b = belief_update(b_minus, r.accepts, r.votes, r0, r1)
        if (1.0 - b) * a - b * be <= tau:
            return k
        b_minus = (1.0 - be) * b + a * (1.0 - b)
    return None


def guard_rule(rounds: Sequence[Round], delta: int) -> tuple[int, tuple[int, ...]]:
    """VRR-Guard (§2.3): keep an incumbent c (round 0); candidate pₖ replaces it only if
    S(pₖ) ≥ S(c) + δ. Returns the final incumbent's index and the incumbent after each round.
    Accept counts are compared as counts (the paper's S); rounds with no votes never replace.
    δ is capped at the round's vote count, so a verifier with fewer votes than δ (LDB's single
    visible test) can still promote a candidate that passes where the incumbent failed."""
    if not rounds:
        return 0, ()
    inc = 0
    history = [0]
    for k in range(1, len(rounds)):
        r = rounds[k]
        if r.votes > 0 and r.accepts >= rounds[inc].accepts + min(delta, r.votes):
            inc = k
        history.append(inc)
    return inc, tuple(history)


def sign_identifiable(
    rounds: Sequence[Round],
    params: VrrParams,
    samples: Sequence[VrrParams],
    settings: VrrSettings,
) -> tuple[bool, str, float | None]:
    """Sign-identifiability check (§2.2, §2.3): the stop decision rests on the signs of Gₖ, so
    it is trusted only if J ≥ ``j_min`` and the bootstrap draws give the point estimate's stop
    round in at least ``sign_stability`` of cases. Returns (ok, reason, agreement)."""
    if params.j < settings.j_min:
        return False, f"J = {params.j:.3f} < j_min = {settings.j_min}", None
    if not samples:
        return True, "no bootstrap samples: J check only", None
    point = first_stop(rounds, params, settings.tau)
    agree = sum(1 for s in samples if first_stop(rounds, s, settings.tau) == point)
    agreement = agree / len(samples)
    if agreement < settings.sign_stability:
        return False, f"gain sign unstable: {agreement:.2f} of bootstrap draws agree", agreement
    return True, "gain sign stable across bootstrap draws", agreement


@dataclass(slots=True)
class VrrDecision:
    """Decision record for one loop (SPEC §5.3 report)."""

    mode: str  # "stop" | "guard" | "none"
    reason: str
    n_rounds: int
    actor_round: int | None  # index of the round the actor shipped (its last)
    shipped_round: int | None  # index of the round the policy ships
    stop_round: int | None
    guard_round: int | None
    beliefs: list[float]
    priors: list[float]
    gains: list[float]
    guard_incumbents: list[int]
    true_validity: list[bool | None]
    sign_agreement: float | None
    rounds_saved: int
    settings: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}


def vrr_decide(rounds: Sequence[Round], settings: VrrSettings) -> VrrDecision:
    """Pick VRR-Stop or VRR-Guard for this loop and say which round it would ship."""
    n = len(rounds)
    truth = [r.valid for r in rounds]
    if n == 0:
        return VrrDecision(
            "none",
            "no verify-repair rounds",
            0,
            None,
            None,
            None,
            None,
            [],
            [],
            [],
            [],
            [],
            None,
            0,
            settings.to_dict(),
        )
    actor_round = n - 1
    guard_round, incumbents = guard_rule(rounds, settings.delta)
    params = settings.params
    result: StopResult | None = None
    agreement: float | None = None
    if settings.mode == "guard":
        use_stop, reason = False, "guard forced by settings"
    elif params is None:
        use_stop, reason = False, "uncalibrated: no parameters, gain sign not identifiable"
    elif any(
        math.isnan(x) for x in (params.rho0, params.rho1, params.alpha, params.beta, params.prior)
    ):
        use_stop, reason = False, "parameters not identified (NaN), gain sign not identifiable"
    else:
        result = stop_rule(rounds, params, settings.tau)
        if settings.mode == "stop":
            use_stop, reason = True, "stop forced by settings"
        else:
            use_stop, reason, agreement = sign_identifiable(
                rounds, params, settings.samples, settings
            )
    if use_stop and result is not None:
        stop = result.stop_round
        shipped = stop if stop is not None else actor_round
        mode = "stop"
        if stop is None:
            reason += "; gain stayed > tau through the recorded rounds"
    else:
        shipped = guard_round
        mode = "guard"
    return VrrDecision(
        mode=mode,
        reason=reason,
        n_rounds=n,
        actor_round=actor_round,
        shipped_round=shipped,
        stop_round=result.stop_round if result else None,
        guard_round=guard_round,
        beliefs=list(result.beliefs) if result else [],
        priors=list(result.priors) if result else [],
        gains=list(result.gains) if result else [],
        guard_incumbents=list(incumbents),
        true_validity=truth,
        sign_agreement=agreement,
        rounds_saved=max(actor_round - shipped, 0),
        settings=settings.to_dict(),
    )
