from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from policies.vrr import (
    Round,
    VrrParams,
    VrrSettings,
    belief_predict,
    belief_update,
    first_stop,
    guard_rule,
    marginal_gain,
    sign_identifiable,
    stop_rule,
    vrr_decide,
)

P = VrrParams(rho0=0.2, rho1=0.1, alpha=0.3, beta=0.1, prior=0.5)


@pytest.mark.parametrize("s,n", [(0, 5), (3, 5), (5, 5), (7, 10), (1, 1)])
def test_belief_update_is_bayes_with_binomial_likelihoods(s: int, n: int) -> None:
    l1 = sps.binom.pmf(s, n, 1 - P.rho1)
    l0 = sps.binom.pmf(s, n, P.rho0)
    expected = 0.3 * l1 / (0.3 * l1 + 0.7 * l0)
    assert belief_update(0.3, s, n, P.rho0, P.rho1) == pytest.approx(expected, rel=1e-12)


def test_zero_votes_leave_the_belief_unchanged() -> None:
    assert belief_update(0.37, 0, 0, 0.2, 0.1) == 0.37


def test_j_zero_votes_carry_no_information() -> None:
    # J = 0: accept probability is the same whether valid or not
    for s in range(6):
        assert belief_update(0.4, s, 5, 0.5, 0.5) == pytest.approx(0.4)


def test_perfect_verifier_edges() -> None:
    assert belief_update(0.5, 5, 5, 0.0, 0.0) == 1.0
    assert belief_update(0.5, 0, 5, 0.0, 0.0) == 0.0
    assert belief_update(0.5, 2, 5, 0.0, 0.0) == 0.5  # impossible under both: no update
    assert belief_update(0.0, 5, 5, 0.2, 0.1) == 0.0 and belief_update(1.0, 0, 5, 0.2, 0.1) == 1.0


def test_large_vote_counts_do_not_underflow() -> None:
    b = belief_update(0.5, 900, 1000, 0.2, 0.1)
    assert 0.0 <= b <= 1.0 and b > 0.999


def test_predict_and_gain_formulas() -> None:
    assert belief_predict(0.6, 0.3, 0.1) == pytest.approx(0.9 * 0.6 + 0.3 * 0.4)
    assert marginal_gain(0.6, 0.3, 0.1) == pytest.approx(0.4 * 0.3 - 0.6 * 0.1)
    # the gain is zero exactly at b = α / (α + β)
    assert marginal_gain(0.75, 0.3, 0.1) == pytest.approx(0.0)


def test_stop_rule_stops_at_first_nonpositive_gain() -> None:
    rounds = [Round(0, 0, 5), Round(1, 1, 5), Round(2, 5, 5), Round(3, 5, 5)]
    res = stop_rule(rounds, P)
    assert res.stop_round == 2
    assert all(g > 0 for g in res.gains[:2]) and res.gains[2] <= 0
    assert len(res.beliefs) == 4 and res.priors[0] == P.prior
    assert res.priors[1] == pytest.approx(belief_predict(res.beliefs[0], P.alpha, P.beta))
    assert first_stop(rounds, P) == 2


def test_stop_rule_tau_and_no_stop() -> None:
    rounds = [Round(0, 0, 5), Round(1, 0, 5)]
    assert stop_rule(rounds, P).stop_round is None
    assert stop_rule(rounds, P, tau=1.0).stop_round == 0
    assert stop_rule([], P).stop_round is None


def test_guard_replaces_only_with_margin() -> None:
    rounds = [Round(0, 2, 5), Round(1, 4, 5), Round(2, 5, 5), Round(3, 0, 0)]
    assert guard_rule(rounds, 2) == (1, (0, 1, 1, 1))  # 5 < 4 + 2 keeps round 1
    assert guard_rule(rounds, 3) == (2, (0, 0, 2, 2))
    assert guard_rule([], 2) == (0, ())
    # δ is capped at the vote count: one visible test can still promote a passing candidate
    one_vote = [Round(0, 0, 1), Round(1, 1, 1), Round(2, 1, 1)]
    assert guard_rule(one_vote, 3) == (1, (0, 1, 1))


def test_sign_identifiability() -> None:
    rounds = [Round(0, 5, 5)]
    s = VrrSettings(params=P, j_min=0.1)
    ok, reason, _ = sign_identifiable(rounds, P, [], s)
    assert ok and "J check only" in reason
    low_j = VrrParams(0.5, 0.45, 0.3, 0.1, 0.5)
    assert not sign_identifiable(rounds, low_j, [], s)[0]
    # draws on both sides of the decision boundary: unstable
    flip = VrrParams(0.2, 0.1, 0.3, 0.1, 0.5)  # stops at round 0
    bad = VrrParams(0.2, 0.1, 0.9, 0.0, 0.5)  # beta = 0: never stops
    ok2, reason2, agreement = sign_identifiable(rounds, flip, [flip, bad], s)
    assert (ok2, agreement) == (False, 0.5) and "unstable" in reason2


def test_vrr_decide_modes() -> None:
    rounds = [Round(0, 1, 5), Round(1, 5, 5), Round(2, 5, 5)]
    uncal = vrr_decide(rounds, VrrSettings())
    assert uncal.mode == "guard" and "uncalibrated" in uncal.reason
    cal = vrr_decide(rounds, VrrSettings(params=P))
    assert cal.mode == "stop" and cal.shipped_round == 1 and cal.rounds_saved == 1
    forced = vrr_decide(rounds, VrrSettings(params=VrrParams(0.5, 0.5, 0.3, 0.1, 0.5), mode="stop"))
    assert forced.mode == "stop"
    nan = vrr_decide(rounds, VrrSettings(params=VrrParams(0.2, 0.1, math.nan, math.nan, 0.5)))
    assert nan.mode == "guard" and "NaN" in nan.reason
    empty = vrr_decide([], VrrSettings(params=P))
    assert empty.mode == "none" and empty.shipped_round is None
    assert cal.to_dict()["settings"]["params"]["alpha"] == 0.3
