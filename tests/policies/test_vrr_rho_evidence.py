"""ρ0 and ρ1 where only labels identify them (fewer than 3 votes per candidate, as in LDB's
MBPP runs: one visible test per task) follow α's and β's rule: a stated minimum of labelled
candidates, an exact interval, and below it "not identified" with the reason and what follows
for the loops."""

from __future__ import annotations

import math

import pytest

from policies.vrr import Round, VrrSettings
from policies.vrr.calibration import VoteObservation, calibrate
from policies.vrr.decision import vrr_decide
from policies.vrr.evidence import MIN_TRANSITIONS, RHO_CONSEQUENCE, clopper_pearson


def mbpp_loops(valid_labelled: int) -> list[VoteObservation]:
    """MBPP-shaped loops: one visible test (one vote) per candidate; 40 loops end on an
    invalid candidate (labelled, 10 of them pass the visible test), ``valid_labelled`` end on a
    valid one that passes it; earlier rounds fail the test and are unlabelled."""
    obs: list[VoteObservation] = []
    loop = 0
    for k in range(40):
        obs.append(VoteObservation(0, 1, None, True, loop))
        obs.append(VoteObservation(1 if k < 10 else 0, 1, False, False, loop))
        loop += 1
    for _ in range(valid_labelled):
        obs.append(VoteObservation(0, 1, None, True, loop))
        obs.append(VoteObservation(1, 1, True, False, loop))
        loop += 1
    return obs


def test_rho1_from_a_few_valid_candidates_is_not_identified_and_never_zero_width() -> None:
    cal = calibrate(mbpp_loops(3), [], n_boot=20, seed=0)
    assert math.isnan(cal.params.rho1)
    assert cal.intervals["rho1"] == pytest.approx(clopper_pearson(0, 3))  # [0, 0.71], not [0, 0]
    assert cal.intervals["rho1"][1] > 0.7
    note = next(n for n in cal.notes if n.startswith("rho1 not identified"))
    assert "3 labelled valid candidates with votes, fewer than min_evidence = 20" in note
    assert note.endswith(RHO_CONSEQUENCE)
    assert all(math.isnan(s.rho1) for s in cal.samples)
    # ρ0 rests on 40 labelled invalid candidates: identified, with its exact interval
    assert cal.params.rho0 == pytest.approx(10 / 40)
    assert cal.intervals["rho0"] == pytest.approx(clopper_pearson(10, 40))


def test_an_unidentified_rho_makes_the_loop_not_applicable_and_says_why() -> None:
    cal = calibrate(mbpp_loops(3), [], n_boot=20, seed=0)
    loop = [Round(0, 0, 1), Round(1, 1, 1)]
    d = vrr_decide(loop, VrrSettings(params=cal.params, samples=cal.samples))
    assert d.not_applicable is not None and d.not_applicable.startswith(
        "parameters not identified: rho1"
    )
    assert d.not_applicable.endswith(RHO_CONSEQUENCE)
    forced = vrr_decide(loop, VrrSettings(params=cal.params, mode="guard"))
    assert forced.mode == "guard" and forced.applied  # Guard needs no estimate


def test_rho1_from_enough_valid_candidates_is_identified_with_its_exact_interval() -> None:
    cal = calibrate(mbpp_loops(MIN_TRANSITIONS), [], n_boot=20, seed=0)
    assert cal.params.rho1 == pytest.approx(0.0, abs=1e-6)
    assert cal.intervals["rho1"] == pytest.approx(clopper_pearson(0, MIN_TRANSITIONS))
    assert cal.intervals["rho1"][1] > 0.1  # zero failures of 20 still bound it by 0.17
    assert not any(n.startswith("rho") for n in cal.notes)


def test_repeated_votes_identify_rho_without_the_label_minimum() -> None:
    """Three or more votes per candidate: the mixture tells the states apart without labels,
    so the rule for labels alone does not apply."""
    obs = [VoteObservation(5 if k % 2 else 1, 5, None, True, k) for k in range(60)]
    obs += [VoteObservation(5, 5, True, False, 60)]
    cal = calibrate(obs, [], n_boot=10, seed=0)
    assert not math.isnan(cal.params.rho1) and not math.isnan(cal.params.rho0)
    assert not any(n.startswith("rho") for n in cal.notes)


@pytest.mark.parametrize("minimum", [1, 3, 4, 10, 40, 41])
def test_sensitivity_of_rho_identification_to_min_evidence(minimum: int) -> None:
    cal = calibrate(mbpp_loops(3), [], n_boot=5, seed=0, min_evidence=minimum)
    assert math.isnan(cal.params.rho1) is (minimum > 3)
    assert math.isnan(cal.params.rho0) is (minimum > 40)
    # the interval is the exact one whatever the minimum: it reports the evidence, not the rule
    assert cal.intervals["rho1"] == pytest.approx(clopper_pearson(0, 3))
