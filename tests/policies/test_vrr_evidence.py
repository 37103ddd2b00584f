"""VRR's repair rates need a stated minimum of evidence and carry exact intervals; Guard's
margin δ, which the paper leaves open, comes with a table of how the verdicts change with it."""

from __future__ import annotations

import math

import pytest

from policies import Auditor
from policies.stats.report import summarise_run
from policies.vrr import Round, VrrParams, VrrSettings
from policies.vrr.calibration import VoteObservation, calibrate
from policies.vrr.decision import vrr_decide
from policies.vrr.evidence import MIN_TRANSITIONS, clopper_pearson, rate_identified
from policies.vrr.sensitivity import MARGINS, DeltaSensitivity
from tests.builders.events import Events


def test_clopper_pearson_is_the_exact_interval() -> None:
    assert clopper_pearson(0, 1) == pytest.approx((0.0, 0.975))
    lo, hi = clopper_pearson(0, 20)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 20))  # 0.168
    assert clopper_pearson(5, 10) == pytest.approx((0.187086, 0.812914), abs=1e-6)
    assert clopper_pearson(10, 10)[1] == 1.0
    assert all(math.isnan(x) for x in clopper_pearson(0, 0))


def loops(from_valid: int) -> tuple[list[VoteObservation], list[tuple[bool, bool]]]:
    """Votes of 40 labelled loops, 30 repairs of an invalid candidate and ``from_valid``
    repairs of a valid one that stayed valid."""
    obs = [VoteObservation(3 if k % 2 else 0, 3, bool(k % 2), True, k) for k in range(40)]
    return obs, [(False, k < 6) for k in range(30)] + [(True, True)] * from_valid


def test_beta_from_one_transition_is_not_identified_and_never_zero_width() -> None:
    cal = calibrate(*loops(1), n_boot=20, seed=0)
    assert math.isnan(cal.params.beta)
    assert cal.intervals["beta"] == pytest.approx((0.0, 0.975))  # not 0 [0, 0]
    assert any(
        "beta not identified: 1 labelled repair of a valid candidate" in n for n in cal.notes
    )
    assert all(math.isnan(s.beta) for s in cal.samples)
    assert cal.params.alpha == pytest.approx(0.2)  # 30 transitions: identified
    assert cal.intervals["alpha"] == pytest.approx(clopper_pearson(6, 30))


def test_beta_from_enough_transitions_is_identified_with_its_exact_interval() -> None:
    cal = calibrate(*loops(MIN_TRANSITIONS), n_boot=20, seed=0)
    assert cal.params.beta == 0.0
    assert cal.intervals["beta"] == pytest.approx(clopper_pearson(0, MIN_TRANSITIONS))
    assert cal.intervals["beta"][1] > 0.1


@pytest.mark.parametrize("minimum", [1, 5, 10, 11, 20, 50])
def test_sensitivity_to_min_evidence(minimum: int) -> None:
    cal = calibrate(*loops(10), n_boot=5, seed=0, min_evidence=minimum)
    assert math.isnan(cal.params.beta) is (minimum > 10)
    assert rate_identified(10, minimum) is (minimum <= 10)
    assert math.isnan(cal.params.alpha) is (minimum > 30)


def test_an_unidentified_beta_makes_the_decision_say_so() -> None:
    cal = calibrate(*loops(1), n_boot=20, seed=0)
    settings = VrrSettings(params=cal.params, samples=cal.samples)
    # a loop whose stop round depends on β: not applicable, naming β
    d = vrr_decide([Round(0, 2, 3), Round(1, 3, 3), Round(2, 3, 3)], settings)
    assert d.not_applicable == "parameters not identified: beta (the stop round depends on them)"


def guard_trace() -> list[dict]:
    """A loop Guard heads: round 0 passes none of 6 tests (invalid), round 1 passes 3 (valid)."""
    ev = Events("g", task={"id": "g"})
    for k, (accepts, valid) in enumerate([(0, False), (3, True)]):
        ev.add("candidate", candidate_id=f"c{k}", round=k, content="x", labels={"valid": valid})
        ev.add("verification", candidate_id=f"c{k}", round=k, accepts=accepts, votes=6)
    return ev.events


def test_delta_sensitivity_counts_verdicts_per_margin() -> None:
    results = [Auditor(("vrr",), {"vrr": {"mode": "guard"}}).audit(guard_trace())["vrr"]]
    assert results[0].record["round_votes"] == [[0, 6], [3, 6]]
    table = summarise_run(results, n_boot=10)["vrr"]["delta_sensitivity"]
    assert set(table) == set(MARGINS)
    # δ(6) = 3 (the default): the 3/6 repair replaces the 0/6 incumbent, as the actor did
    assert table["ceil(0.5n)"]["same"] == 1 and table["delta=3"]["same"] == 1
    # δ(6) = 4: Guard keeps the failing incumbent — a harm that hangs on the margin
    assert table["ceil(0.6n)"]["harm"] == 1 and table["ceil(0.6n)"]["same"] == 0


def test_delta_sensitivity_leaves_loops_other_rules_head_alone() -> None:
    fold = DeltaSensitivity()
    fold.add({"not_applicable": "no verify-repair rounds"})
    rec = {
        "mode": "stop",
        "shipped_round": 0,
        "actor_round": 1,
        "true_validity": [True, False],
        "round_votes": [[1, 1], [0, 1]],
    }
    fold.add(rec)
    got = fold.result()
    assert all(c["not_applicable"] == 1 and c["rescue"] == 1 for c in got.values())


def test_an_unidentified_rate_is_searched_over_its_exact_interval() -> None:
    """β from 7 transitions (4 broke) is not identified, but its exact interval [0.18, 0.90]
    still bounds it: a loop whose stop round is the same for every β in it is decided."""
    params = VrrParams(0.33, 0.02, 0.13, math.nan, 0.91)
    loop = [Round(0, 3, 3), Round(1, 3, 3)]
    lo, hi = clopper_pearson(4, 7)
    unbounded = VrrSettings(params=params)
    assert vrr_decide(loop, unbounded).not_applicable  # β = 0 would repair on: depends on β
    bounded = VrrSettings(
        params=params,
        rate_lower=VrrParams(math.nan, math.nan, 0.07, lo, math.nan),
        rate_upper=VrrParams(math.nan, math.nan, 0.22, hi, math.nan),
    )
    d = vrr_decide(loop, bounded)
    assert d.mode == "stop" and d.shipped_round == 0
    assert d.reason.endswith(f"every value of beta in [{lo:.3f}, {hi:.3f}]")
