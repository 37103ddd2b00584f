"""The run tables, read a page at a time, equal their definitions over the whole list of rows:
the parts computed differently to keep no rows — fixed-k validity counted by loop length, feedback
events counted by their values, sums and means, Δ's pairs from one byte per result — checked
against the direct computation on arbitrary records."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from policies.jsonsafe import json_safe
from policies.stats.checklist_metrics import feedback_rates
from policies.stats.delta import Pair, delta_report, success_counts
from policies.stats.methods import (
    average_precision,
    counted_average_precision,
    counted_roc_auc,
    paired_bootstrap_ci,
    roc_auc,
)
from policies.stats.paper_tables import Total, checklist_table, rate, vrr_table
from policies.stats.report import summarise_run
from policies.stats.twincheck_report import twincheck_report
from policies.transitions import TRANSITIONS

maybe_bool = st.sampled_from([None, True, False])
# what a malformed record may hold where a boolean belongs: the tables read only its truth
loose = st.one_of(maybe_bool, st.sampled_from([0, 1, "", "yes", 2.5]))


def _validity(rec: dict[str, Any], k: Any) -> bool | None:
    tv = rec.get("true_validity") or []
    if not isinstance(k, int) or not 0 <= k < len(tv):
        return None
    return None if tv[k] is None else bool(tv[k])


vrr_records = st.fixed_dictionaries(
    {"n_rounds": st.integers(-1, 6)},
    optional={
        "true_validity": st.lists(loose, max_size=7),
        "shipped_round": st.one_of(st.none(), st.integers(-1, 7)),
        "not_applicable": st.sampled_from(["", "no verifier"]),
        "rounds_saved": st.integers(0, 5),
        "alternatives": st.fixed_dictionaries(
            {}, optional={"stop": st.integers(-1, 7), "guard": st.integers(0, 7)}
        ),
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(vrr_records, max_size=12))
def test_vrr_fixed_k_counted_by_loop_length_is_the_definition(recs):
    """Fixed-k validity, capped and reaching, for every k below the longest loop: the fold
    counts round k of loops reaching it and each loop's last round by its length."""
    table = vrr_table([{"record": r} for r in recs])
    loops = [r for r in recs if r.get("n_rounds")]
    k_max = max((r["n_rounds"] for r in loops), default=0)
    expected = {
        str(k): {
            "capped": rate([_validity(r, min(k, r["n_rounds"] - 1)) for r in loops]),
            "reaching": rate([_validity(r, k) for r in loops if r["n_rounds"] > k]),
        }
        for k in range(k_max)
    }
    assert table["fixed_k_validity"] == expected
    assert table["actor"] == rate([_validity(r, r["n_rounds"] - 1) for r in loops])
    headline = [r for r in loops if not r.get("not_applicable")]
    assert table["headline"] == rate([_validity(r, r.get("shipped_round")) for r in headline])
    saved = [int(r.get("rounds_saved") or 0) for r in headline]
    assert table["mean_rounds_saved"] == (sum(saved) / len(saved) if saved else None)


events = st.fixed_dictionaries(
    {},
    optional={
        "before": loose,
        "after": loose,
        "guarded_after": loose,
        "valid": loose,
        "not_applicable": st.sampled_from([None, "", "no label", "no claim"]),
        "actor_class": st.sampled_from(["held", "fixed", None]),
        "guarded_class": st.sampled_from(["held", 1, None]),
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(events, max_size=5), max_size=8))
def test_checklist_rates_from_counted_events_are_the_definition(per_trace):
    """The fold keeps no events, only how many carry each value of what the rates read (a
    non-boolean by its truth): the rates, counts and classes — in their order — are those of
    `feedback_rates` and counters over every event."""
    table = checklist_table([{"record": {"feedback_events": es}} for es in per_trace])
    every = [e for es in per_trace for e in es]
    applicable = [e for e in every if not e.get("not_applicable")]
    assert table["feedback_events"] == len(every)
    assert table["applicable_events"] == len(applicable)
    # (json_safe: an undefined rate is NaN, equal to nothing)
    assert json_safe(table["actor_all_events"]) == json_safe(feedback_rates(every).to_dict())
    for which, key in (("actor", "actor"), ("guarded", "guarded"), ("keep", "always_keep")):
        assert json_safe(table[key]) == json_safe(feedback_rates(applicable, which).to_dict())
    na = Counter(str(e["not_applicable"]) for e in every if e.get("not_applicable"))
    assert list(table["not_applicable_events"].items()) == list(na.items())
    actor = Counter(str(e.get("actor_class")) for e in every)
    guarded = Counter(str(e.get("guarded_class")) for e in every)
    assert list(table["classes"]["actor"].items()) == list(actor.items())
    assert list(table["classes"]["guarded"].items()) == list(guarded.items())


@given(st.lists(st.one_of(st.integers(-(2**70), 2**70), st.floats(-1e9, 1e9), st.booleans())))
def test_total_is_sum(values):
    """Exact for ints, and sum's own (compensated) float addition once a float comes."""
    total = Total()
    for v in values:
        total.add(v)
    assert repr(total.result()) == repr(sum(values))


rows = st.lists(
    st.fixed_dictionaries(
        {
            "policy": st.just("commit"),
            "applied": st.booleans(),
            "actor_success": maybe_bool,
            "guarded_success": maybe_bool,
            "transition": st.sampled_from(TRANSITIONS),
            "continuation": st.sampled_from(["exact", "live", None]),
            "record": st.fixed_dictionaries(
                {}, optional={"not_applicable": st.sampled_from(["", "no answer"])}
            ),
        },
        optional={"not_applicable": st.sampled_from(["", "no answer"])},
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(rows, st.lists(st.sampled_from("ab"), min_size=30, max_size=30))
def test_effect_from_result_codes_is_the_definition(results, cats):
    """Δ, its bootstrap and the success counts from one byte per result equal those from the
    rows' own outcomes (the not-applicable rows left out), overall and per category."""
    cats = cats[: len(results)]
    s = summarise_run(results, cats, n_boot=50)

    def expected(idx: list[int]) -> dict[str, Any]:
        # not applicable: by its transition or its own field (policies.stats.report.na_reason)
        keep = [i for i in idx if results[i]["transition"] != "not_applicable"]
        keep = [i for i in keep if not results[i].get("not_applicable")]
        pairs = [
            Pair(
                results[i]["actor_success"],
                results[i]["guarded_success"],
                results[i]["continuation"] == "exact",
            )
            for i in keep
        ]
        d = delta_report(pairs, [cats[i] for i in keep], n_boot=50)
        counts = Counter(results[i]["transition"] for i in idx)
        return {
            "ci": d["ci"],
            "ci_known": d["ci_known"],
            "bounds": d["bounds"],
            "delta": d["delta_known"],
            "transitions": {t: counts.get(t, 0) for t in TRANSITIONS},
            "actor_counts": success_counts([results[i]["actor_success"] for i in keep]),
            "guarded_counts": success_counts([results[i]["guarded_success"] for i in keep]),
        }

    def got(effect: dict[str, Any]) -> dict[str, Any]:
        return {k: effect[k] for k in ("ci", "ci_known", "bounds", "delta", "transitions")} | {
            "actor_counts": effect["actor_counts"],
            "guarded_counts": effect["guarded_counts"],
        }

    if results:
        assert got(s["overall"]) == expected(list(range(len(results))))
    for c, effect in s["per_category"].items():
        assert got(effect) == expected([i for i, x in enumerate(cats) if x == c])


@settings(max_examples=200, deadline=None)
@given(rows, st.lists(st.sampled_from("abc"), min_size=30, max_size=30))
def test_twincheck_tables_from_counted_outcomes_are_the_definition(results, cats):
    """Table 1 (and 2, per category): rates, Δ and its paired-bootstrap CI from how many results
    have each pair of outcomes equal those from the rows' own outcomes — over the applicable
    results, as the run's statistics (a not-applicable result is no pair)."""
    cats = cats[: len(results)]
    report = twincheck_report([{**r, "policy": "twincheck"} for r in results], cats, n_boot=50)

    def expected(idx: list[int]) -> dict[str, Any]:
        known = [
            i
            for i in idx
            if results[i]["actor_success"] is not None
            and results[i]["guarded_success"] is not None
            and results[i]["transition"] != "not_applicable"
            and not results[i].get("not_applicable")
        ]
        if not known:
            return {"actor_pct": None, "guarded_pct": None, "delta_pp": None, "ci_pp": None}
        a = [float(results[i]["actor_success"]) for i in known]
        g = [float(results[i]["guarded_success"]) for i in known]
        ci = paired_bootstrap_ci(a, g, [cats[i] for i in known], n_boot=50)
        return {
            "actor_pct": 100 * sum(a) / len(a),
            "guarded_pct": 100 * sum(g) / len(g),
            "delta_pp": 100 * ci.estimate,
            "ci_pp": [100 * ci.low, 100 * ci.high],
        }

    def got(table: dict[str, Any]) -> dict[str, Any]:
        return {k: table[k] for k in ("actor_pct", "guarded_pct", "delta_pp", "ci_pp")}

    assert got(report["table1"]) == json_safe(expected(list(range(len(results)))))
    for c, table in report["table2"].items():
        assert got(table) == json_safe(expected([i for i, x in enumerate(cats) if x == c]))


@given(st.lists(st.tuples(st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0, 3.0]), st.booleans())))
def test_gate_ranking_counted_by_score_is_the_definition(scored):
    """ROC-AUC and AP from how many traces (and failures) have each gate score equal those
    over the list: both read the scores only by their tie groups."""
    groups: dict[float, tuple[int, int]] = {}
    for score, label in scored:
        n, pos = groups.get(score, (0, 0))
        groups[score] = (n + 1, pos + label)
    scores, labels = [s for s, _ in scored], [y for _, y in scored]
    assert repr(counted_roc_auc(groups)) == repr(roc_auc(scores, labels))
    assert repr(counted_average_precision(groups)) == repr(average_precision(scores, labels))


def test_annotation_queue_items_are_each_rows_strict_json_item():
    """The fold keeps the queue as trace ids and (reason, needs) indexes; its items are still
    `json_safe(_queue_item(row, i))` of each unknown row, in order, whatever the values
    (a missing trace id, a reason that is not text, NaN in it)."""
    from policies.stats.report import RunSummary, _queue_item

    rows: list[dict[str, Any]] = [
        {"trace_id": 7, "transition": "unknown", "actor_success": None, "record": {}},
        {"transition": "unknown", "guarded_success": None, "unknown_reason": "no re-check"},
        {"trace_id": 9, "transition": "rescue", "actor_success": False, "guarded_success": True},
        {"trace_id": 2**70, "transition": "unknown", "record": {"unknown_reason": "big"}},
        {"trace_id": 3, "transition": "unknown", "record": {"unknown_reason": {"x": float("nan")}}},
        {"trace_id": 4, "transition": "unknown", "unknown_reason": "no re-check"},
        {"trace_id": True, "transition": "unknown", "unknown_reason": "no re-check"},
    ]
    fold = RunSummary(None)
    for r in rows:
        fold.add(r)
    want = [json_safe(_queue_item(r, i)) for i, r in enumerate(rows) if i != 2]
    assert fold.result(n_boot=10)["annotation_queue"] == want
    assert [type(x["trace"]) for x in want] == [int, int, int, int, int, bool]


def test_annotation_queue_memory_grows_by_bytes_per_item():
    """A 10⁵-trace run has ~61,000 unknown results over its policies, and their
    queue items as dicts (each with its own strings, as decoded from its record) were ~250
    bytes each while the summary folded. Kept as a trace id and a pair index: 20,000 items
    hold under 1 MB (as dicts, ~5 MB)."""
    import tracemalloc

    import orjson

    from policies.stats.report import RunSummary

    reason = orjson.dumps("the re-check is not in the trace and no model is configured")
    fold = RunSummary(None)
    tracemalloc.start()
    for i in range(20_000):
        fold.add(
            {
                "trace_id": 10**6 + i,
                "transition": "unknown",
                "actor_success": True,
                "guarded_success": None,
                "record": {"unknown_reason": orjson.loads(reason)},  # a string per row
            },
            "coding",
        )
    held = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    assert held < 1, held
    queue = fold.result(n_boot=10)["annotation_queue"]
    assert len(queue) == 20_000 and queue[-1]["trace"] == 10**6 + 19_999
