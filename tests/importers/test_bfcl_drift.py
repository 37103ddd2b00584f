"""A BFCL run is scored only against the task it was run on: recorded user turns that differ
from the task of the run's release (the installed one, or a kept earlier release's:
`test_bfcl_release`) make its outcome unknown, with the reason, and are flagged at import
(older-release result files share the installed release's test ids)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from policies import Auditor
from policies.outcome_gaps import TASK_DRIFT, TASK_NOT_INSTALLED, task_drift_reason
from policies.trace import Trace
from traces.importers._bfcl_drift import drifted_turns, file_release
from traces.importers.bfcl import load_tasks
from traces.samples.bfcl import ADDED_FUNCTIONS_PROMPT, build_record

from ._helpers import run

pytest.importorskip("bfcl_eval")

V3 = "result/some-model-FC/BFCL_v3_multi_turn_base_result.json"


def imported(record: dict[str, Any], name: str = V3) -> tuple[list[dict[str, Any]], Any]:
    events, report = run("bfcl", orjson.dumps(record) + b"\n", name=name)
    assert report.errors == []
    return [se.event for se in events], report


def drifted(record: dict[str, Any], turn: int = 1) -> dict[str, Any]:
    """The record with turn ``turn``'s recorded user text as an older release worded it."""
    rec = copy.deepcopy(record)
    logs = [x for x in rec["inference_log"] if isinstance(x, dict) and "begin_of_turn_query" in x]
    query = logs[turn]["begin_of_turn_query"]
    query[-1]["content"] = "Could you list the files in the current folder instead?"
    return rec


def audit(events: list[dict[str, Any]]) -> Any:
    from policies.environments.bfcl import BFCLEnvironment

    return Auditor(("twincheck",), environment=BFCLEnvironment()).audit(events)["twincheck"]


@pytest.fixture(scope="module")
def ground_truth_run() -> dict[str, Any]:
    record, _ = build_record(load_tasks()["multi_turn_base_0"], perturb=False)
    return record


def test_same_release_is_not_flagged(ground_truth_run) -> None:
    events, report = imported(ground_truth_run, name="BFCL_v4_multi_turn_base_result.json")
    assert "installed_release" not in events[0]["meta"] and not report.flags


def test_file_release_from_the_name() -> None:
    assert file_release(V3) == "v3"
    assert file_release("BFCL_v4_multi_turn_miss_func_result.json") == "v4"
    assert file_release("run.jsonl") is None and file_release("") is None


def test_matching_turns_are_scored_against_the_task_of_the_run_s_release(
    ground_truth_run,
) -> None:
    events, report = imported(ground_truth_run)
    header = events[0]
    assert header["meta"]["task_release"]["release"] == "v3"  # base_0 is the same in v3 and v4
    assert "task_drift" not in header.get("meta", {}) and "task_differs_from_installed" not in (
        report.flags
    )
    assert header["meta"]["recorded_release"] == "v3"
    assert header["meta"]["installed_release"] == "v4"
    assert report.flags["recorded_release_differs"] == 1
    assert task_drift_reason(Trace.from_events(events).header) is None
    result = audit(events)
    assert result.actor_success is True and result.unknown_reason is None


def test_differing_turns_make_the_outcome_unknown_with_the_reason(ground_truth_run) -> None:
    events, report = imported(drifted(ground_truth_run))
    drift = events[0]["meta"]["task_drift"]
    assert drift["turns"] == [1] and drift["recorded_release"] == "v3"
    assert drift["compared"] == len(load_tasks()["multi_turn_base_0"]["question"])
    assert report.flags["task_differs_from_release"] == 1
    result = audit(events)
    assert result.actor_success is None and result.transition == "unknown"
    assert result.unknown_reason == TASK_DRIFT


def test_a_test_id_the_installed_release_lacks_is_unknown_too() -> None:
    record = {"id": "multi_turn_composite_7", "result": [[[{"ls": "{}"}]]]}
    events, report = imported(record)
    assert report.flags["task_not_found"] == 1
    result = Auditor(("twincheck",)).audit(events)["twincheck"]
    assert result.unknown_reason == TASK_NOT_INSTALLED


def test_drift_compares_user_turns_only_where_both_sides_have_them() -> None:
    q = [[{"role": "user", "content": "Move the file."}], [], [{"role": "user", "content": "Sort"}]]
    logs = [
        {"begin_of_turn_query": [{"role": "system", "content": "docs"}, *q[0]]},
        {"begin_of_turn_query": [{"role": "user", "content": ADDED_FUNCTIONS_PROMPT}]},
        {"begin_of_turn_query": [{"role": "user", "content": " Sort "}]},
    ]
    assert drifted_turns(logs, q) == ([], 2)  # system prompt and the harness's prompt aside
    assert drifted_turns(logs[:1], q) == ([], 1)  # a run that stopped early has not drifted
    extra = [*logs, {"begin_of_turn_query": [{"role": "user", "content": "More?"}]}]
    assert drifted_turns(extra, q) == ([3], 2)  # a turn the installed task does not have
    logs[2]["begin_of_turn_query"][0]["content"] = "Sort it by date"
    assert drifted_turns(logs, q) == ([2], 2)
