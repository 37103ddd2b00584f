"""A candidate that does not define the task's entry point is no round of its repair loop: in
published LATS logs ``implementations[0]`` is a program for another problem (``strlen`` in
nearly every record of the GPT-4 HumanEval run)."""

from __future__ import annotations

import io
import json
from typing import Any

from policies import Auditor
from policies.repair_candidates import (
    FOREIGN_CANDIDATE,
    completes_prompt,
    defines_entry_point,
    foreign_candidate_ids,
)
from policies.trace import Trace
from policies.vrr import VrrParams
from policies.vrr.calibration import observations_from_traces
from policies.vrr.loops import loop_rounds
from policies.vrr.policy import VrrPolicy
from traces.importers import IMPORTERS, ImportReport

STRLEN = "def strlen(string: str) -> int:\n    return len(string)"
ENCRYPT_WRONG = (
    "def encrypt(s: str) -> str:\n    return ''.join(chr((ord(c) - 97 + 2) % 26 + 97) for c in s)"
)
ENCRYPT_RIGHT = ENCRYPT_WRONG.replace("+ 2", "+ 4")


def lats_record(first: str) -> dict[str, Any]:
    """One record as LATS writes it (MultiPL-E keys, feedback as one executor string)."""

    def feedback(passed: list[str], failed: list[str]) -> str:
        return "Tested passed:\n" + "\n".join(passed) + "\n\nTests failed:\n" + "\n".join(failed)

    tests = ["assert encrypt('hi') == 'lm'", "assert encrypt('gf') == 'kj'"]
    return {
        "name": "HumanEval_89_encrypt",
        "language": "py",
        "prompt": "def encrypt(s: str) -> str:\n    '''Rotate the alphabet by four.'''\n",
        "entry_point": "encrypt",
        "test": "def check(candidate):\n    assert candidate('hi') == 'lm'\n\n"
        "def test_check():\n    check(encrypt)\n\ntest_check()\n",
        "solution": ENCRYPT_RIGHT,
        "is_solved": "True",
        "reflections": ["the function is named strlen", "the shift is 2, not 4"],
        "implementations": [first, ENCRYPT_WRONG, ENCRYPT_RIGHT],
        "test_feedback": [
            feedback([], [f"{t} # output: name 'encrypt' is not defined" for t in tests]),
            feedback([], [f"{t} # output: 'jk'" for t in tests]),
            feedback(tests, []),
        ],
        "acc": "1.0",
    }


def imported(record: dict[str, Any]) -> list[dict[str, Any]]:
    stream = io.BytesIO((json.dumps(record) + "\n").encode())
    stream.name = "humaneval-py._mcts_8_gpt-4_pass_at_k_1_py.jsonl"  # type: ignore[attr-defined]
    report = ImportReport(format="repair_runs", filename=stream.name)
    events = [se.event for se in IMPORTERS["repair_runs"].convert(stream, report)]
    assert not report.errors, report.errors
    return events


def test_defines_entry_point_reads_top_level_definitions() -> None:
    assert defines_entry_point(ENCRYPT_WRONG, "encrypt")
    assert not defines_entry_point(STRLEN, "encrypt")  # another task's program
    assert defines_entry_point("import os\nencrypt = lambda s: s\n", "encrypt")
    assert defines_entry_point("class encrypt:\n    pass\n", "encrypt")
    assert defines_entry_point("from codecs import encode as encrypt\n", "encrypt")
    # a repair with a syntax error is still a round of its loop
    assert defines_entry_point("def encrypt(s:\n    return s", "encrypt")
    # another language (MultiPL-E): not judged by Python's grammar
    assert defines_entry_point("fn encrypt(s: String) -> String {\n    s\n}", "encrypt")
    assert not defines_entry_point("fn strlen(s: String) -> usize {\n    s.len()\n}", "encrypt")
    # named only in a comment, a call or a nested helper: not defined at the top level
    assert not defines_entry_point("# encrypt\ndef strlen(s):\n    return len(s)\n", "encrypt")
    nested = "def outer():\n    def encrypt(s):\n        return s\n"
    assert not defines_entry_point(nested, "encrypt")
    assert not defines_entry_point("def strlen(s):\n    return encrypt(s)\n", "encrypt")


def test_a_lats_record_whose_first_implementation_answers_another_task() -> None:
    events = imported(lats_record(STRLEN))
    trace = Trace.from_events(events)
    assert foreign_candidate_ids(trace) == ["c0"]
    rounds = loop_rounds(trace)
    assert [r.candidate_id for r in rounds] == ["c1", "c2"]  # c1 is the loop's first round
    assert [(r.accepts, r.votes) for r in rounds] == [(0, 2), (2, 2)]
    obs, transitions = observations_from_traces([trace])
    assert [(o.accepts, o.first) for o in obs] == [(0, True), (2, False)]
    record = VrrPolicy().analyse(trace)
    assert record["data_quality"] == {FOREIGN_CANDIDATE: ["c0"]}
    assert record["n_rounds"] == 2


def test_the_same_record_with_its_own_first_implementation_keeps_every_round() -> None:
    events = imported(lats_record(ENCRYPT_WRONG))
    trace = Trace.from_events(events)
    assert foreign_candidate_ids(trace) == []
    assert [r.candidate_id for r in loop_rounds(trace)] == ["c0", "c1", "c2"]
    record = VrrPolicy().analyse(trace)
    assert record["data_quality"] == {} and record["n_rounds"] == 3


def test_a_loop_of_foreign_candidates_only_is_not_applicable_for_that_reason() -> None:
    record = lats_record(STRLEN)
    record.update(
        implementations=[STRLEN], test_feedback=record["test_feedback"][:1], is_solved=False
    )
    events = imported(record)
    assert loop_rounds(Trace.from_events(events)) == []
    params = VrrParams(0.1, 0.1, 0.3, 0.1, 0.5)
    result = Auditor(("vrr",), {"vrr": {"params": params.to_dict()}}).audit(events)["vrr"]
    assert result.not_applicable == FOREIGN_CANDIDATE
    assert result.transition == "not_applicable"


def test_a_trace_without_an_entry_point_has_no_foreign_candidate() -> None:
    events = imported(lats_record(STRLEN))
    for e in events:
        if e["type"] == "trace":
            e["task"].pop("entry_point")
            e["env"]["config"].pop("entry_point")
    trace = Trace.from_events(events)
    assert foreign_candidate_ids(trace) == []
    assert len(loop_rounds(trace)) == 3


def reflexion_record(solution: str) -> dict[str, Any]:
    """One record as Reflexion's published HumanEval log writes it (HumanEval keys, no
    ``implementations``): ``solution`` is the body of the prompt's function."""
    return {
        "task_id": "HumanEval/2",
        "prompt": 'def truncate_number(number: float) -> float:\n    """ Return the decimal part.\n'
        '    >>> truncate_number(3.5)\n    0.5\n    """\n',
        "entry_point": "truncate_number",
        "test": "def check(candidate):\n    assert candidate(3.5) == 0.5\n",
        "solution": solution,
        "is_solved": True,
        "reflections": [],
    }


def test_a_completion_of_the_prompt_is_the_task_s_own_candidate() -> None:
    events = imported(reflexion_record("    return number - int(number)"))
    trace = Trace.from_events(events)
    assert foreign_candidate_ids(trace) == []
    assert not any((e.get("meta") or {}).get("foreign_candidate") for e in events)
    record = VrrPolicy().analyse(trace)
    assert record["data_quality"] == {}


def test_a_whole_program_for_another_task_after_the_prompt_is_still_foreign() -> None:
    trace = Trace.from_events(imported(reflexion_record(STRLEN)))
    assert foreign_candidate_ids(trace) == ["c0"]
    prompt = reflexion_record("")["prompt"]
    assert completes_prompt("    return number - int(number)", prompt, "truncate_number")
    assert not completes_prompt(STRLEN, prompt, "truncate_number")
    assert not completes_prompt("    return 0", prompt, "strlen")  # another function's body
    assert not completes_prompt("    return 0", None, "truncate_number")  # no prompt
