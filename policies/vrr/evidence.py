"""How much evidence a VRR repair rate needs before it counts as identified (SPEC §5.3).

α = P(invalid → valid) and β = P(valid → invalid) are proportions of labelled transitions out
of one state. From a handful of them the estimate is noise: one labelled repair of a valid
candidate that stayed valid gives β = 0, and a percentile bootstrap of one observation gives
the interval [0, 0] — VRR-Stop then reads "repair never breaks anything", never stops, and
every loop ends unknown. So a rate is identified only from at least ``min_evidence`` labelled
transitions out of its state, and its interval is the exact Clopper–Pearson interval of its
counts (never a zero-width one: with k = 0 of n it is [0, 1 − (α/2)^{1/n}]).

``min_evidence`` (`VrrSettings.min_evidence`, default `MIN_TRANSITIONS` = 20): the paper asks
for "a small number of labelled transitions" without a number (SPEC: "a few hundred suffice").
At 20 transitions with none observed, the exact 95 % upper bound of the rate is 0.17 — the
largest rate this project accepts as "about zero" for the sign of the gain; below 20 the bound
passes 0.17 quickly (10: 0.31, 5: 0.52, 1: 0.975) and the sign of G = (1−b)α − bβ can rest on
a rate anywhere in that range. The audit reports the stop decision as depending on the rate (or
takes the rate-free stop round, `policies.vrr.stop_round_without`) instead.

ρ0 = P(accept | invalid) and ρ1 = P(reject | valid) follow the same rule where only labels
identify them (fewer than 3 votes per candidate: the vote mixture alone cannot tell the two
states apart): each is identified only from at least ``min_evidence`` labelled candidates of its
state with votes, and its interval is the Clopper–Pearson interval of those candidates' votes —
a bootstrap of a few valid candidates that all passed gives ρ1 = 0 [0, 0]. Without ρ0 and ρ1
there is no J check and no VRR-Stop: the loop is not applicable (VRR-Guard, which estimates
nothing, heads it only when ``vrr.mode=guard`` forces it).
"""

from __future__ import annotations

import math

#: Default least number of labelled transitions out of a state for α or β (see module doc).
MIN_TRANSITIONS = 20


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper–Pearson) interval of a binomial proportion, k successes of n;
    (NaN, NaN) without trials."""
    if n <= 0:
        return math.nan, math.nan
    # scipy (requirements.txt) only where a calibration is made: its import is slow
    from scipy.stats import beta  # type: ignore[import-untyped]

    tail = (1.0 - level) / 2.0
    lo = 0.0 if k <= 0 else float(beta.ppf(tail, k, n - k + 1))
    hi = 1.0 if k >= n else float(beta.ppf(1.0 - tail, k + 1, n - k))
    return lo, hi


def rate_identified(n: int, min_evidence: int) -> bool:
    """Whether a rate estimated from ``n`` labelled transitions out of its state counts as
    identified: at least ``min_evidence`` of them."""
    return n >= max(1, min_evidence)


def not_identified_note(name: str, n: int, state: str, min_evidence: int) -> str:
    """Why a rate is not identified, for the calibration's notes and the decision's reason."""
    return (
        f"{name} not identified: {n} labelled repair{'s' if n != 1 else ''} of {state} "
        f"candidate, fewer than min_evidence = {min_evidence}"
    )


#: The consequence of an unidentified ρ0 or ρ1, as the notes and the decision state it.
RHO_CONSEQUENCE = (
    "the J check and VRR-Stop need rho0 and rho1: not applicable (vrr.mode=guard runs the "
    "estimation-free Guard)"
)


def rho_not_identified_note(name: str, n: int, min_evidence: int) -> str:
    """Why ρ0 or ρ1 is not identified from ``n`` labelled candidates, and what follows."""
    state = "invalid" if name == "rho0" else "valid"
    return (
        f"{name} not identified: {n} labelled {state} candidate{'s' if n != 1 else ''} with "
        f"votes, fewer than min_evidence = {min_evidence}; {RHO_CONSEQUENCE}"
    )
