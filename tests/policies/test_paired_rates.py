"""Rates compared with each other are over one set: the cases where both are known. Each rate
alone stays over its own known cases and says so; beside it, the paired rates — so a rule
known on fewer traces (Guard on the loops it gives a round for, a guarded outcome unknown
where the actor's is known) never looks better or worse than the actor by its denominator."""

from __future__ import annotations

from typing import Any

import pytest

from policies.stats.paper_tables import PairedRate, commit_table, vrr_table
from policies.stats.report import summarise_run
from policies.stats.twincheck_report import twincheck_report


def row(actor: bool | None, guarded: bool | None, continuation: str = "replaced") -> dict:
    if actor is None or guarded is None:
        transition = "unknown"
    else:
        transition = {(0, 1): "rescue", (1, 0): "harm"}.get((int(actor), int(guarded)), "same")
    return {
        "policy": "twincheck",
        "applied": True,
        "actor_success": actor,
        "guarded_success": guarded,
        "transition": transition,
        "continuation": continuation,
        "record": {},
    }


def not_applicable(actor: bool) -> dict:
    return {**row(actor, actor, "exact"), "transition": "not_applicable", "applied": False}


#: 200 applicable traces: one unchanged trajectory of unknown outcome (exact replay, both sides
#: unknown) is a known pair of Δ (it adds 0) but no case of a rate; and 18 traces without a
#: tool call, where TwinCheck is not applicable (as on the τ-bench airline run).
ROWS = (
    [row(True, True, "exact")] * 120
    + [row(False, True)] * 4
    + [row(False, False, "exact")] * 75
    + [row(None, None, "exact")]
    + [not_applicable(True)] * 10
    + [not_applicable(False)] * 8
)


def test_statistics_and_table1_compare_rates_over_the_same_pairs() -> None:
    overall = summarise_run(ROWS, n_boot=50)["overall"]
    table1 = twincheck_report(ROWS, n_boot=50)["table1"]
    paired = overall["paired"]
    assert (paired["n"], paired["actor_k"], paired["guarded_k"]) == (199, 120, 124)
    assert (table1["n_known"], table1["actor_k"], table1["guarded_k"]) == (199, 120, 124)
    # not applicable: apart in both, never "same" pairs of Table 1
    assert table1["n_not_applicable"] == overall["n_not_applicable"] == 18
    assert table1["n"] == overall["n_applicable"] == 200
    assert table1["actor_pct"] == pytest.approx(100 * paired["actor_rate"])
    assert table1["guarded_pct"] == pytest.approx(100 * paired["guarded_rate"])
    # Δ's known pairs also hold the unchanged trajectory, and say so
    assert overall["n_known"] == 200 == paired["n"] + paired["n_unchanged_unknown"]


def test_unpaired_rates_are_each_over_their_own_known_outcomes() -> None:
    rows = [row(True, True)] * 3 + [row(True, None)] * 5 + [row(False, True)] * 2
    overall = summarise_run(rows, n_boot=50)["overall"]
    # alone: the actor 8 of 10 known, the guarded 5 of 5 known — beside each other they would
    # read as a 20-point gain though Δ over the five pairs both know is +0.4
    assert overall["actor_counts"]["successes"] == 8 and overall["actor_counts"]["known"] == 10
    assert overall["guarded_counts"]["known"] == 5
    paired = overall["paired"]
    assert (paired["n"], paired["actor_k"], paired["guarded_k"]) == (5, 3, 5)
    assert paired["guarded_rate"] - paired["actor_rate"] == overall["delta_known"]


def test_without_unknowns_the_paired_rates_are_the_rates() -> None:
    rows = [row(True, True)] * 3 + [row(False, True)] * 2 + [row(True, False)]
    overall = summarise_run(rows, n_boot=50)["overall"]
    paired = overall["paired"]
    assert paired["n"] == 6 and paired["n_unchanged_unknown"] == 0
    assert paired["actor_rate"] == overall["actor_success"]
    assert paired["guarded_rate"] == overall["guarded_success"]


def loop(validity: list[bool | None], guard: int | None, stop: int | None = None) -> dict:
    n = len(validity)
    record: dict[str, Any] = {
        "n_rounds": n,
        "true_validity": validity,
        "mode": "guard",
        "shipped_round": guard,
        "rounds_saved": 0,
        "alternatives": {"stop": stop, "guard": guard, "stop_status": "stopped"},
    }
    return {"policy": "vrr", "record": record}


def test_vrr_guard_is_compared_with_the_actor_over_the_loops_both_know() -> None:
    # Guard gives a round on 4 loops (all valid); the actor's last round is known on 10, 6 valid
    rows = [loop([False, True], guard=1)] * 4 + [loop([True, True], guard=None)] * 2
    rows += [loop([False, False], guard=None)] * 4
    t = vrr_table(rows)
    assert (t["guard"]["k"], t["guard"]["known"], t["guard"]["of"]) == (4, 4, 4)
    assert (t["actor"]["k"], t["actor"]["known"]) == (6, 10)
    g = t["paired_with_actor"]["guard"]
    assert (g["n"], g["of"], g["k"], g["actor_k"]) == (4, 10, 4, 4)
    assert g["rate"] == g["actor_rate"] == 1.0 and g["delta"] == 0.0


def test_vrr_unlabelled_rounds_are_left_out_of_the_pair() -> None:
    rows = [loop([False, True], guard=0)] * 3 + [loop([None, True], guard=0)] * 2
    rows += [loop([True, None], guard=0)]
    g = vrr_table(rows)["paired_with_actor"]["guard"]
    assert (g["n"], g["k"], g["actor_k"]) == (3, 0, 3) and g["delta"] == -1.0
    h = vrr_table(rows)["paired_with_actor"]["headline"]
    assert h == g  # the headline rule is Guard here: the same loops, the same rounds


def test_commit_correctness_is_compared_where_both_answers_are_known() -> None:
    def conv(actor: bool | None, commit: bool | None) -> dict:
        rec = {"applied": True, "actor_correct": actor, "commit_correct": commit}
        return {"policy": "commit", "record": rec}

    t = commit_table([conv(True, None)] * 6 + [conv(False, True)] * 2 + [conv(True, True)])
    assert t["actor_correct"]["known"] == 9 and t["commit_correct"]["known"] == 3
    p = t["correct_paired"]
    assert (p["n"], p["actor_k"], p["k"], p["of"]) == (3, 1, 3, 9)


def test_a_paired_rate_of_nothing_known_has_no_rate() -> None:
    p = PairedRate()
    p.add(True, None)
    p.add(None, False)
    assert p.to_dict() == {
        "n": 0,
        "of": 2,
        "actor_k": 0,
        "k": 0,
        "actor_rate": None,
        "rate": None,
        "delta": None,
    }
