from __future__ import annotations

import math
import random

import pytest
from scipy import stats as sps

import policies.vrr.rule as vrr_module
from policies.vrr.decision import choose_rule, vrr_decide
from policies.vrr.rule import (
    Round,
    SignMemo,
    VrrParams,
    VrrSettings,
    belief_filter,
    belief_predict,
    belief_update,
    first_stop,
    guard_margin,
    guard_rule,
    marginal_gain,
    sign_identifiable,
    stop_round_without,
    stop_rule,
    stop_test,
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
    fixed2 = VrrSettings(delta=2, unanimous_replaces=False)
    assert guard_rule(rounds, fixed2)[:2] == (1, (0, 1, 1, 1))  # 5 < 4 + 2 keeps round 1
    fixed3 = VrrSettings(delta=3, unanimous_replaces=False)
    assert guard_rule(rounds, fixed3)[:2] == (2, (0, 0, 2, 2))
    assert guard_rule(rounds, fixed3)[2] == (None, 3, 3, None)  # zero votes: no margin
    assert guard_rule([], fixed3) == (0, (), ())
    # δ is capped at the vote count: one visible test can still promote a passing candidate
    one_vote = [Round(0, 0, 1), Round(1, 1, 1), Round(2, 1, 1)]
    assert guard_rule(one_vote, fixed3)[:2] == (1, (0, 1, 1))


@pytest.mark.parametrize("votes,delta", [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3), (6, 3), (10, 5)])
def test_guard_margin_scales_with_the_number_of_votes(votes: int, delta: int) -> None:
    plain = VrrSettings(unanimous_replaces=False)
    assert guard_margin(votes, 0, plain) == delta  # δ(n) = max(1, ceil(0.5 n)), at most n


@pytest.mark.parametrize("votes,delta", [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (8, 5), (10, 6)])
def test_guard_margin_with_a_fraction_of_0_6(votes: int, delta: int) -> None:
    plain = VrrSettings(unanimous_replaces=False, delta_fraction=0.6)
    assert guard_margin(votes, 0, plain) == delta  # δ(n) = max(1, ceil(0.6 n)), at most n


def test_a_repair_passing_half_of_six_tests_replaces_an_incumbent_passing_none() -> None:
    rounds = [Round(0, 0, 6), Round(1, 3, 6)]
    assert guard_rule(rounds, VrrSettings(unanimous_replaces=False))[0] == 1  # δ(6) = 3
    strict = VrrSettings(unanimous_replaces=False, delta_fraction=0.6)  # δ(6) = 4
    assert guard_rule(rounds, strict)[0] == 0


def test_a_fully_passing_repair_can_replace_a_three_of_four_incumbent() -> None:
    rounds = [Round(0, 3, 4), Round(1, 4, 4)]
    # the defect: with δ = 3 and 4 votes, 3/4 could never be replaced
    assert guard_rule(rounds, VrrSettings(delta=3, unanimous_replaces=False))[0] == 0
    assert guard_rule(rounds, VrrSettings(unanimous_replaces=False))[0] == 0
    assert guard_rule(rounds, VrrSettings())[0] == 1  # default: unanimous replaces split
    assert guard_margin(4, 3, VrrSettings()) == 1
    # a split round never profits from the unanimity clause
    assert guard_rule([Round(0, 3, 5), Round(1, 4, 5)], VrrSettings())[0] == 0
    assert guard_rule([Round(0, 5, 5), Round(1, 5, 5)], VrrSettings())[0] == 0


def test_stop_rule_and_first_stop_share_one_filter_and_one_stop_test() -> None:
    rounds = [Round(0, 0, 5), Round(1, 1, 5), Round(2, 5, 5), Round(3, 5, 5), Round(4, 0, 5)]
    series = list(belief_filter(rounds, P))
    res = stop_rule(rounds, P)
    assert [b for _, b, _ in series] == list(res.beliefs)
    assert [g for _, _, g in series] == list(res.gains)
    expected = next(k for k, (_, _, g) in enumerate(series) if stop_test(g, 0.0))
    assert res.stop_round == first_stop(rounds, P) == expected
    assert stop_test(0.0, 0.0) and not stop_test(1e-12, 0.0)


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
    cal = vrr_decide(rounds, VrrSettings(params=P))
    assert cal.mode == "stop" and cal.shipped_round == 1 and cal.rounds_saved == 1
    assert (cal.stop_round, cal.guard_round) == (1, None)  # one headline, no second marker
    assert cal.alternatives["guard"] == 1 and cal.alternatives["stop_status"] == "stopped"
    forced = vrr_decide(rounds, VrrSettings(params=VrrParams(0.5, 0.5, 0.3, 0.1, 0.5), mode="stop"))
    assert forced.mode == "stop"
    guard = vrr_decide(rounds, VrrSettings(mode="guard"))
    assert guard.mode == "guard" and guard.applied and guard.shipped_round == guard.guard_round
    empty = vrr_decide([], VrrSettings(params=P))
    assert empty.mode == "none" and empty.not_applicable == "no verify-repair rounds"
    assert cal.to_dict()["settings"]["params"]["alpha"] == 0.3


def test_missing_parameters_make_the_loop_not_applicable_never_a_guard_fallback() -> None:
    rounds = [Round(0, 1, 5), Round(1, 5, 5), Round(2, 5, 5)]
    uncal = vrr_decide(rounds, VrrSettings())
    assert uncal.mode == "none" and uncal.not_applicable is not None
    assert "parameters not identified" in uncal.not_applicable and not uncal.applied
    assert uncal.shipped_round == uncal.actor_round and uncal.rounds_saved == 0
    ab = vrr_decide(rounds, VrrSettings(params=VrrParams(0.2, 0.1, math.nan, math.nan, 0.5)))
    assert ab.not_applicable == (
        "parameters not identified: alpha, beta (the stop round depends on them)"
    )
    assert ab.alternatives["stop_status"] == "not_identified"
    rho = choose_rule(rounds, VrrParams(math.nan, 0.1, 0.3, 0.1, 0.5), VrrSettings())
    assert rho[0] is None and "rho0" in rho[1]


def test_guard_fallback_only_for_small_j_or_an_unstable_sign() -> None:
    rounds = [Round(0, 1, 5), Round(1, 5, 5), Round(2, 5, 5)]
    # J small: Guard even though alpha and beta are missing (Guard needs no estimates)
    low_j = VrrParams(0.5, 0.45, math.nan, math.nan, 0.5)
    d = vrr_decide(rounds, VrrSettings(params=low_j))
    assert d.mode == "guard" and "J = 0.050" in d.reason and d.applied
    # identified but unstable across the bootstrap draws: Guard, with the agreement recorded
    flip = VrrParams(0.2, 0.1, 0.3, 0.1, 0.5)
    never = VrrParams(0.2, 0.1, 0.9, 0.0, 0.5)
    unstable = vrr_decide(rounds, VrrSettings(params=flip, samples=(never, never, flip)))
    assert unstable.mode == "guard" and "unstable" in unstable.reason
    assert unstable.sign_agreement == pytest.approx(1 / 3)
    # a draw missing a parameter is left out of the agreement, not counted against it
    nan_draw = VrrParams(0.2, 0.1, math.nan, 0.1, 0.5)
    stable = vrr_decide(rounds, VrrSettings(params=flip, samples=(flip, nan_draw)))
    assert stable.mode == "stop" and stable.sign_agreement == 1.0


def test_stop_past_the_recorded_rounds_is_unknown_or_ships_the_last_round() -> None:
    rounds = [Round(0, 0, 5), Round(1, 0, 5)]  # the gain stays positive: repair would go on
    d = vrr_decide(rounds, VrrSettings(params=P))
    assert d.mode == "stop" and d.stop_round is None and d.shipped_round is None
    assert d.unknown_reason is not None and "past the recorded rounds" in d.unknown_reason
    last = vrr_decide(rounds, VrrSettings(params=P, beyond_recorded="ship_last"))
    assert last.shipped_round == 1 and last.unknown_reason is None


def test_a_missing_alpha_or_beta_is_searched_and_used_only_when_it_cannot_matter() -> None:
    # rho1 = 0: a failed vote proves the candidate invalid, so b = 0 and G = alpha > 0 for any
    # beta: repair goes on through both failed rounds whatever beta is
    sure = VrrParams(0.2, 0.0, 0.3, math.nan, 0.5)
    failed = [Round(0, 0, 1), Round(1, 0, 1)]
    assert stop_round_without(failed, sure, ["beta"], 0.0) == (True, None)
    d = vrr_decide(failed, VrrSettings(params=sure, beyond_recorded="ship_last"))
    assert d.mode == "stop" and d.applied and "beta not identified" in d.reason
    assert d.beliefs == [] and d.shipped_round == 1  # no series drawn with a made-up beta
    # a passing round: stop or not depends on beta, so the loop is not applicable
    passed = [Round(0, 0, 1), Round(1, 1, 1)]
    assert stop_round_without(passed, sure, ["beta"], 0.0) == (False, None)
    na = vrr_decide(passed, VrrSettings(params=sure))
    assert na.not_applicable == "parameters not identified: beta (the stop round depends on them)"
    with pytest.raises(ValueError):
        stop_round_without(passed, sure, ["prior"], 0.0)


def _draws(n: int, seed: int) -> tuple[VrrParams, ...]:
    rng = random.Random(seed)
    return tuple(
        VrrParams(rng.uniform(0.05, 0.4), rng.uniform(0.0, 0.3), rng.random(), rng.random(), 0.5)
        for _ in range(n)
    )


def test_the_sign_memo_gives_the_checks_own_answer_and_runs_each_pattern_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(7)
    samples = _draws(40, 1)
    settings = VrrSettings(params=P, samples=samples, j_min=0.0, sign_stability=0.6)
    loops = []
    for _ in range(300):  # few short patterns, as real loops have; labels vary, votes do not
        n = rng.randint(1, 4)
        loops.append([Round(k, rng.randint(0, 2), 2, valid=rng.random() < 0.5) for k in range(n)])
    plain = [sign_identifiable(r, P, samples, settings) for r in loops]
    calls = 0
    real_first_stop = vrr_module.first_stop

    def counting(*args: object, **kwargs: object) -> int | None:
        nonlocal calls
        calls += 1
        return real_first_stop(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(vrr_module, "first_stop", counting)
    memo = SignMemo()
    assert [sign_identifiable(r, P, samples, settings, memo) for r in loops] == plain
    patterns = {tuple((x.votes, x.accepts) for x in r) for r in loops}
    assert len(patterns) < len(loops) / 3
    assert calls == len(patterns) * (len(samples) + 1)  # the point estimate and every draw


def test_the_sign_memo_starts_over_for_other_draws_params_or_tau_or_when_full() -> None:
    rounds = [Round(0, 1, 2), Round(1, 2, 2)]
    memo = SignMemo(limit=1)
    a, b = _draws(30, 2), _draws(30, 3)
    s_a, s_b = VrrSettings(params=P, samples=a), VrrSettings(params=P, samples=b)
    for samples, settings in ((a, s_a), (b, s_b), (a, s_a)):
        assert sign_identifiable(rounds, P, samples, settings, memo) == sign_identifiable(
            rounds, P, samples, settings
        )
    other = VrrParams(0.3, 0.05, 0.2, 0.4, 0.6)
    assert sign_identifiable(rounds, other, a, s_a, memo) == sign_identifiable(
        rounds, other, a, s_a
    )
    high_tau = VrrSettings(params=P, samples=a, tau=0.2)
    assert sign_identifiable(rounds, P, a, high_tau, memo) == sign_identifiable(
        rounds, P, a, high_tau
    )
    assert sign_identifiable([Round(0, 0, 2)], P, a, high_tau, memo) == sign_identifiable(
        [Round(0, 0, 2)], P, a, high_tau
    )
    assert len(memo._agree) == 1  # the limit: full, it starts over rather than grow
    nothing = SignMemo(limit=0)
    assert sign_identifiable(rounds, P, a, s_a, nothing) == sign_identifiable(rounds, P, a, s_a)
    assert len(nothing._agree) == 0
