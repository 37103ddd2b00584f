"""Repair-loop layouts other than LDB's: Reflexion / LATS over MultiPL-E (records keyed
by `name`, `test_feedback` one executor string per implementation, no `given_tests`, no
`is_passing`, booleans and `acc` as strings) and final-solution files (`solution` +
`reflections`). The records are the real shared HumanEval run rewritten into each layout the way
Reflexion's executor writes it, so the expected counts come from the real feedback."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_examples
from traces.importers import detect

from ._helpers import DATA, check_fuzzed, check_invariants, roundtrip, run, validate_all
from .fuzz import mutate

HUMANEVAL = DATA / "ldb" / "humaneval_reflexion_gpt-3.5-turbo-0613.jsonl"
REAL = [orjson.loads(x) for x in HUMANEVAL.read_bytes().splitlines() if x.strip()]


def multipl_e_name(rec: dict) -> str:
    return f"HumanEval_{rec['task_id'].split('/')[1]}_{rec['entry_point']}"


def executor_text(given: list[str], failed: list[str]) -> str:
    """Reflexion's PyExecutor feedback: passed asserts, then failed ones with their output."""
    failed_asserts = {f.split("# Real Execution Output:")[0].strip() for f in failed}
    passed = [t for t in given if t.strip() not in failed_asserts]
    text = "Tested passed:" + "".join(f"\n{t}" for t in passed) + "\n\nTests failed:"
    for f in failed:
        test, _, out = f.partition("# Real Execution Output:")
        text += f"\n{test.strip()} # output: {out.strip()}"
    return text


def reflexion_layout(rec: dict, i: int) -> dict:
    return {
        "name": multipl_e_name(rec),
        "language": "py",
        "prompt": rec["prompt"],
        "test": rec["test"],
        "stop_tokens": ["\ndef", "\n#", "\nif", "\nclass"],
        "implementations": rec["implementations"],
        "test_feedback": [executor_text(rec["given_tests"], fb) for fb in rec["test_feedback"]],
        "reflections": rec["reflections"],
        "solution": rec["solution"],
        "is_solved": str(rec["is_solved"]),  # "True" / "False"
        "acc": str(round((i + 1) / 2, 2)),
    }


def final_layout(rec: dict) -> dict:
    return {
        "name": multipl_e_name(rec),
        "prompt": rec["prompt"],
        "solution": rec["solution"],
        "reflections": rec["reflections"],
        "is_solved": rec["is_solved"],
    }


def jsonl(records: list[dict]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def test_reflexion_multipl_e_layout_imports_every_record_with_the_real_votes():
    data = jsonl([reflexion_layout(r, i) for i, r in enumerate(REAL)])
    assert detect(data[:65536], "humaneval-py._reflexion_5_gpt-4_pass_at_k_1_py.jsonl") == (
        "repair_runs"
    )
    events, report = run(
        "repair_runs", data, "humaneval-py._reflexion_5_gpt-4_pass_at_k_1_py.jsonl"
    )
    assert report.errors == []
    traces = check_invariants(events)
    assert len(traces) == len(REAL)
    assert report.flags["is_solved_as_string"] == len(REAL)
    for rec in REAL:
        evs = traces[f"repair:{multipl_e_name(rec)}"]
        head = evs[0]
        assert head["agent"] == "reflexion"
        assert head["task"]["benchmark"] == "humaneval"
        assert head["task"]["entry_point"] == rec["entry_point"]
        assert head["outcome"]["success"] is rec["is_solved"]
        # is_passing is not in this layout: derived from the last feedback, and said so.
        assert head["outcome"]["is_passing"] is rec["is_passing"]
        assert head["meta"]["is_passing_derived"] is True
        assert isinstance(head["meta"]["acc"], str)
        vers = [e for e in evs if e["type"] == "verification"]
        assert [v["votes"] for v in vers] == [len(rec["given_tests"])] * len(vers)
        assert [v["votes"] - v["accepts"] for v in vers] == [len(f) for f in rec["test_feedback"]]
    roundtrip(events)
    validate_all(events)


def test_final_solution_file_is_one_candidate_after_its_reflections_and_says_what_it_lacks():
    data = jsonl([final_layout(r) for r in REAL])
    assert detect(data[:65536], "") == "repair_runs"
    events, report = run("repair_runs", data, "mbpp-py._simple_1_gpt-4_pass_at_k_1_py.jsonl")
    assert report.errors == []
    traces = check_invariants(events)
    assert len(traces) == len(REAL)
    [note] = report.notes
    assert "only its final `solution`" in note and "no per-round test feedback" in note
    assert report.to_dict()["notes"] == [note]
    for rec in REAL:
        evs = traces[f"repair:{multipl_e_name(rec)}"]
        cands = [e for e in evs if e["type"] == "candidate"]
        assert [c["content"] for c in cands] == [rec["solution"]]
        assert cands[0]["labels"] == {"valid": rec["is_solved"]}
        refl = [e["content"] for e in evs if e.get("meta", {}).get("kind") == "reflection"]
        assert refl == rec["reflections"]
        assert not any(e["type"] == "verification" for e in evs)
        assert [e["name"] for e in evs if e["type"] == "check"] == ["hidden_tests"]
    validate_all(events)


def test_mbpp_multipl_e_name_gives_the_benchmark_and_entry_point():
    rec = {
        "name": "mbpp_234_volume_cube",
        "prompt": "def volume_cube(l: int) -> int:\n",
        "solution": "def volume_cube(l: int) -> int:\n    return l ** 3",
        "is_solved": "true",
    }
    events, report = run("repair_runs", jsonl([rec]))
    assert report.errors == []
    head = events[0].event
    assert head["trace_id"] == "repair:mbpp_234_volume_cube"
    assert (head["task"]["benchmark"], head["task"]["entry_point"]) == ("mbpp", "volume_cube")
    assert head["outcome"]["success"] is True


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"test_feedback": ["it broke"]}, "$.test_feedback[0]", "'Tests failed:' section"),
        ({"is_solved": "perhaps"}, "$.is_solved", "expected a boolean, found string"),
        ({"name": None}, "$.name", "expected a task id"),
        ({"implementations": None, "solution": None}, "$.implementations", "or a final `solution`"),
        ({"reflections": [1]}, "$.reflections[0]", "expected a reflection text"),
    ],
)
def test_bad_reflexion_records_name_the_field(change, path, message):
    good = reflexion_layout(REAL[0], 0)
    good["implementations"] = good["implementations"][:1]
    good["test_feedback"] = good["test_feedback"][:1]
    bad = {**reflexion_layout(REAL[1], 1), **change}
    events, report = run("repair_runs", jsonl([bad, good]))
    [err] = report.errors
    assert (err.line, err.path) == (1, path) and message in err.message, err
    assert {e.event["trace_id"] for e in events} == {f"repair:{multipl_e_name(REAL[0])}"}


def test_ldb_list_feedback_without_given_tests_says_the_votes_cannot_be_counted():
    rec = {k: v for k, v in REAL[3].items() if k != "given_tests"}
    _, report = run("repair_runs", jsonl([rec]))
    [err] = report.errors
    assert err.path == "$.given_tests" and "votes cannot be counted" in err.message


@settings(
    max_examples=fuzz_examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data(), st.sampled_from(["reflexion", "final"]))
def test_fuzz_new_layouts_never_raise_and_errors_name_line_and_path(data, layout):
    rec = reflexion_layout(REAL[3], 3) if layout == "reflexion" else final_layout(REAL[3])
    events, report = run("repair_runs", mutate(data, rec))
    check_fuzzed(events, report)
    for err in report.errors:
        assert err.line >= 0 and err.path.startswith("$") and err.message
