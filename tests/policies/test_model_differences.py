"""Does a guard help one model more than another: the difference of two models' Δ paired by
task (policies.stats.did) and a run summary's tables per model (policies.stats.report)."""

from __future__ import annotations

import random

import pytest

from policies.stats.did import add_task, difference_in_differences
from policies.stats.report import NO_MODEL, PolicyFold


def tasks(diffs: dict[str, list[tuple[int, int]]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for task, ranges in diffs.items():
        for low, high in ranges:
            add_task(out, task, low, high)
    return out


def known(**diffs: int) -> dict[str, list[int]]:
    return tasks({t: [(d, d)] for t, d in diffs.items()})


def test_hand_computed_case_pairs_common_tasks_and_counts_the_others() -> None:
    # A: rescue on t1, same on t2 and t3, alone on t4; B: same on t1..t3, alone on t5
    a = known(t1=1, t2=0, t3=0, t4=1)
    b = known(t1=0, t2=0, t3=0, t5=-1)
    d = difference_in_differences(a, b, n_boot=500)
    assert (d["n_tasks"], d["n_only_a"], d["n_only_b"]) == (3, 1, 1)
    assert d["did_known"] == pytest.approx(1 / 3)
    assert d["bounds"] == pytest.approx([1 / 3, 1 / 3])
    assert d["ci_kind"] == "known_tasks" and d["n_unknown"] == 0


def test_two_tasks_give_the_exact_bootstrap_interval() -> None:
    # task differences 1 and 0: resampled means 0, ½, 1 with probabilities ¼, ½, ¼, so the
    # 2.5 % and 97.5 % quantiles are 0 and 1
    d = difference_in_differences(known(t1=1, t2=0), known(t1=0, t2=0), n_boot=4000)
    assert d["did_known"] == 0.5
    assert d["ci"] == [0.0, 1.0] and not d["excludes_zero"]


def test_a_task_run_several_times_counts_once_at_its_mean() -> None:
    a = tasks({"t1": [(1, 1), (0, 0)], "t2": [(0, 0)]})
    b = known(t1=0, t2=0)
    d = difference_in_differences(a, b, n_boot=200)
    assert d["n_tasks"] == 2 and d["did_known"] == pytest.approx(0.25)


def _run(rng: random.Random, n: int, rescue: float, harm: float) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i in range(n):
        u = rng.random()
        d = 1 if u < rescue else -1 if u < rescue + harm else 0
        add_task(out, f"q{i}", d, d)
    return out


def test_a_known_difference_is_recovered_with_its_sign() -> None:
    rng = random.Random(7)
    helped = _run(rng, 200, rescue=0.40, harm=0.05)
    barely = _run(rng, 200, rescue=0.05, harm=0.05)
    d = difference_in_differences(helped, barely, n_boot=2000)
    assert 0.2 < d["did_known"] < 0.5
    assert d["ci"][0] > 0 and d["excludes_zero"]
    reverse = difference_in_differences(barely, helped, n_boot=2000)
    assert reverse["did_known"] == pytest.approx(-d["did_known"])
    assert reverse["ci"][1] < 0


def test_identical_runs_give_zero_inside_the_interval() -> None:
    run = _run(random.Random(3), 100, rescue=0.3, harm=0.1)
    d = difference_in_differences(run, run, n_boot=500)
    assert d["did_known"] == 0.0 and d["ci"][0] <= 0.0 <= d["ci"][1]
    # two runs of the same guard effect, drawn apart: the interval still contains 0
    e = difference_in_differences(
        _run(random.Random(1), 150, 0.2, 0.1), _run(random.Random(2), 150, 0.2, 0.1), n_boot=2000
    )
    assert e["ci"][0] <= 0.0 <= e["ci"][1] and not e["excludes_zero"]


def test_unknowns_widen_to_the_bounds() -> None:
    # t2's guarded outcome on A is unknown next to a failed actor: same or rescue
    a = tasks({"t1": [(1, 1)], "t2": [(0, 1)]})
    b = known(t1=0, t2=0)
    d = difference_in_differences(a, b, n_boot=500)
    assert (d["n_known"], d["n_unknown"]) == (1, 1)
    assert d["bounds"] == [0.5, 1.0]
    assert d["ci_kind"] == "with_unknowns"
    assert d["ci"][0] <= 0.5 and d["ci"][1] >= 1.0


def test_no_common_task_gives_no_estimate() -> None:
    d = difference_in_differences(known(t1=1), known(t2=0))
    assert d["n_tasks"] == 0 and d["did_known"] is None and d["ci"] is None


def _row(actor: bool, guarded: bool) -> dict:
    t = {(False, True): "rescue", (True, False): "harm"}.get((actor, guarded), "same")
    return {"actor_success": actor, "guarded_success": guarded, "transition": t, "record": {}}


def test_the_fold_keys_its_tables_by_model_source_and_task() -> None:
    fold = PolicyFold("vrr")
    for i in range(10):
        fold.add(_row(False, True), "c1", model="m1", source="m1", task=f"b:{i}")
        fold.add(
            _row(False, i < 2), "c1", model="m2", source="m2/x" if i % 2 else "m2", task=f"b:{i}"
        )
    fold.add(_row(True, True), "c2", model="", source="", task="")
    out = fold.result(n_boot=200)
    per_model = out["per_model"]
    assert list(per_model) == ["m1", "m2", NO_MODEL]
    assert per_model["m1"]["overall"]["delta_known"] == 1.0
    assert per_model["m2"]["overall"]["delta_known"] == pytest.approx(0.2)
    assert per_model["m1"]["per_category"]["c1"]["n"] == 10
    assert "sources" not in per_model["m1"]
    assert sorted(per_model["m2"]["sources"]) == ["m2", "m2/x"]
    assert per_model["m2"]["sources"]["m2"]["n_traces"] == 5
    [diff] = out["model_differences"]  # the model without tasks is not paired
    assert (diff["a"], diff["b"], diff["n_tasks"]) == ("m1", "m2", 10)
    assert diff["did_known"] == pytest.approx(0.8) and diff["excludes_zero"]
    # the run-level tables are those of all rows
    assert out["overall"]["n"] == 21
