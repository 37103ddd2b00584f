from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_examples
from traces.importers import detect

from ._helpers import (
    DATA,
    check_fuzzed,
    check_invariants,
    count_jsonl,
    roundtrip,
    run,
    validate_all,
)
from .fuzz import mutate

FILES = sorted((DATA / "ldb").glob("*.jsonl"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_real_record_imports(path):
    raw = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert detect(path.read_bytes()[:65536], path.name) == "repair_runs"
    events, report = run("repair_runs", path)
    assert report.errors == []
    traces = check_invariants(events)
    assert len(traces) == count_jsonl(path) == len(raw)
    types = [se.event["type"] for se in events]
    n_impl = sum(len(r["implementations"]) for r in raw)
    assert types.count("candidate") == types.count("verification") == n_impl
    for r in raw:
        evs = traces[f"repair:{r['task_id']}"]
        cands = [e for e in evs if e["type"] == "candidate"]
        vers = [e for e in evs if e["type"] == "verification"]
        assert [c["round"] for c in cands] == list(range(len(r["implementations"])))
        assert cands[-1]["labels"] == {"valid": r["is_solved"]}
        assert [v["votes"] - v["accepts"] for v in vers] == [len(f) for f in r["test_feedback"]]
        assert all(v["votes"] == len(r["given_tests"]) for v in vers)
        assert evs[0]["outcome"]["success"] is r["is_solved"]
        assert evs[0]["labels"]["is_passing"] is r["is_passing"]
    roundtrip(events)
    validate_all(events)


def test_multi_round_record_mapping():
    path = DATA / "ldb" / "mbpp_ldb_gpt-3.5-turbo-0613.jsonl"
    events, _ = run("repair_runs", path)
    traces = check_invariants(events)
    header = next(iter(traces.values()))[0]
    assert header["agent"] == "ldb" and header["model"] == "gpt-3.5-turbo-0613"
    multi = [evs for evs in traces.values() if sum(e["type"] == "candidate" for e in evs) > 1][0]
    cands = [e for e in multi if e["type"] == "candidate"]
    assert cands[1]["parent"] == cands[0]["candidate_id"]
    failed = [e for e in multi if e["type"] == "verification" and e["accepts"] < e["votes"]][0]
    assert "# Real Execution Output:" in failed["meta"]["failed"][0]


RECORD = json.loads(
    (DATA / "ldb" / "mbpp_ldb_gpt-3.5-turbo-0613.jsonl").read_text().splitlines()[0]
)
MULTI = next(
    json.loads(line)
    for line in (DATA / "ldb" / "mbpp_ldb_gpt-3.5-turbo-0613.jsonl").read_text().splitlines()
    if len(json.loads(line)["implementations"]) == 10
)


def one(rec) -> bytes:
    return orjson.dumps(rec) + b"\n"


@pytest.mark.parametrize(
    "change, path, message",
    [
        (
            {"test_feedback": [[], []]},
            "$.test_feedback",
            "expected one feedback list per implementation (1), found 2",
        ),
        ({"implementations": []}, "$.implementations", "found an empty array"),
        ({"is_solved": "yes"}, "$.is_solved", "expected a boolean, found string"),
        # is_passing may be missing (Reflexion does not write it) but not unreadable.
        ({"is_passing": "maybe"}, "$.is_passing", "expected a boolean, found string"),
        ({"is_solved": None}, "$.is_solved", "found nothing"),
        (
            {"test_feedback": [["a", "b"]]},
            "$.test_feedback[0]",
            "expected at most 1 failed visible tests",
        ),
        (
            {"test_feedback": [["assert f(1) == 2 # Real Execution Output: 3"]]},
            "$.is_passing",
            "expected is_passing=False",
        ),
        (
            {"implementations": [42]},
            "$.implementations[0]",
            "expected a program string, found number",
        ),
        ({"given_tests": "assert x"}, "$.given_tests", "expected an array of visible tests"),
    ],
)
def test_inconsistent_records_are_errors(change, path, message):
    events, report = run("repair_runs", one({**RECORD, **change}) + one(MULTI))
    assert {e.event["trace_id"] for e in events} == {f"repair:{MULTI['task_id']}"}
    [err] = report.errors
    assert (err.line, err.trace_id, err.path) == (1, f"repair:{RECORD['task_id']}", path)
    assert message in err.message


def test_truncated_line_is_error():
    events, report = run("repair_runs", one(RECORD)[:50])
    assert (
        events == [] and report.errors[0].line == 1 and "invalid JSON" in report.errors[0].message
    )


@settings(
    max_examples=fuzz_examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_fuzz_never_raises(data):
    events, report = run("repair_runs", mutate(data, MULTI))
    check_fuzzed(events, report)
