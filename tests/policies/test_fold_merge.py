"""A run summary merged from the folds of its parts (issue 17: computed incrementally) is the
summary of one fold over the whole run — byte for byte, bootstrap included — on real records of
all four policies and on arbitrary rows; and a stored fold is read back building nothing but
the fold's own classes."""

from __future__ import annotations

import os
import pickle
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies import POLICIES, Auditor
from policies.merging import NotMergeable
from policies.paper_tables import Total
from policies.run_fold import PolicyFold, dumps, loads
from tests.policies.test_real_data import LDB, SYCON, ldb_traces, records, sycon_events
from tests.policies.test_run_folds import rows as commit_rows
from tests.policies.test_run_folds import vrr_records

# as the app stores records: orjson's text (NaN as null, tuples as lists, numpy as numbers)
_STORED = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def _fold(policy: str, rows: list[tuple[dict[str, Any], str]]) -> PolicyFold:
    fold = PolicyFold(policy)
    for row, category in rows:
        fold.add(row, category)
    return fold


def _merged(policy: str, rows: list[tuple[dict[str, Any], str]], cuts: list[int]) -> PolicyFold:
    """The fold of ``rows`` cut at ``cuts``, each part stored and read back, merged in order."""
    bounds = [0, *sorted(set(cuts)), len(rows)]
    parts = [rows[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
    merged = PolicyFold(policy)
    for part in parts:
        merged.merge(loads(dumps({policy: _fold(policy, part)}))[policy])
    return merged


def _summary(fold: PolicyFold) -> bytes:
    return orjson.dumps(fold.result(n_boot=300))


@pytest.fixture(scope="module")
def real_rows() -> dict[str, list[tuple[dict[str, Any], str]]]:
    """Every policy's stored rows for SYCON traces with elicited confidences (the checklist
    applies) and LDB repair loops (VRR applies), by policy, in trace order."""
    if not SYCON or not LDB:
        pytest.skip("shared data not available")
    traces = [sycon_events(r, elicit=0.9)[0] for r in records(SYCON[0])[:60]]
    traces += ldb_traces(LDB[0], keep=60)
    auditor = Auditor(POLICIES, {}, "heuristic")
    out: dict[str, list[tuple[dict[str, Any], str]]] = {p: [] for p in POLICIES}
    for i, events in enumerate(traces):
        for policy, result in auditor.audit(events).items():
            row = orjson.loads(orjson.dumps(result.to_dict(), option=_STORED))
            out[policy].append(({**row, "trace_id": i}, f"c{i % 3}"))
    return out


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("size", [1, 7, 50])
def test_merged_folds_of_real_records_are_the_whole_runs_summary(real_rows, policy, size):
    rows = real_rows[policy]
    whole = _fold(policy, rows)
    assert whole.n == 120 and whole.summary.paper is not None
    merged = _merged(policy, rows, list(range(size, len(rows), size)))
    assert _summary(merged) == _summary(whole)


def test_the_real_records_exercise_every_table(real_rows):
    """Not a vacuous comparison: the checklist judged feedback, VRR decided loops, TwinCheck's
    report was made."""
    tables = {p: _fold(p, rows).result(n_boot=10) for p, rows in real_rows.items()}
    assert tables["checklist"]["checklist"]["applicable_events"] > 0
    assert tables["vrr"]["vrr"]["loops"] > 0
    assert tables["twincheck"]["report"]["n_traces"] == 120


@settings(max_examples=200, deadline=None)
@given(commit_rows, st.lists(st.integers(0, 30), max_size=5), st.data())
def test_merged_folds_of_any_rows_are_the_whole_fold(results, cuts, data):
    cats = data.draw(st.lists(st.sampled_from("abc"), min_size=len(results), max_size=len(results)))
    rows = [({**r, "trace_id": i}, c) for i, (r, c) in enumerate(zip(results, cats, strict=True))]
    assert _summary(_merged("commit", rows, cuts)) == _summary(_fold("commit", rows))


@settings(max_examples=200, deadline=None)
@given(st.lists(vrr_records, max_size=12), st.lists(st.integers(0, 12), max_size=4))
def test_merged_vrr_tables_are_the_whole_table(recs, cuts):
    rows = [
        (
            {
                "policy": "vrr",
                "transition": "same",
                "actor_success": None,
                "guarded_success": None,
                "record": r,
            },
            "",
        )
        for r in recs
    ]
    assert _summary(_merged("vrr", rows, cuts)) == _summary(_fold("vrr", rows))


def test_a_total_of_floats_is_not_merged_inexactly():
    """sum's float addition is not associative: parts that met a float refuse to merge (the
    app then summarises from the rows), ints merge exactly."""
    a, b = Total(), Total()
    for v in (2**70, 3):
        a.add(v)
    b.add(5)
    a.merge(b)
    assert a.result() == 2**70 + 8
    b.add(0.1)
    with pytest.raises(NotMergeable):
        a.merge(b)


class _Payload:
    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, ("touch should-not-exist",))


def test_a_stored_fold_naming_other_code_is_refused_not_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(pickle.UnpicklingError, match="may not name"):
        loads(pickle.dumps({"commit": _Payload()}))
    assert not (tmp_path / "should-not-exist").exists()
    with pytest.raises(pickle.UnpicklingError, match="not a dict of policy folds"):
        loads(pickle.dumps([1, 2]))
