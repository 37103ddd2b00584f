"""A BFCL result file of an earlier bfcl-eval release (v3) is scored against the task of the
release it was run on (`traces.importers._bfcl_releases`), never against the installed v4 task;
where the v3 releases it may come from disagree on the task's ground truth, its outcome is
unknown with that reason."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest

from policies.data_quality import trace_flags
from policies.outcome_gaps import (
    GROUND_TRUTH_CHANGED,
    TASK_DRIFT,
    TASK_NOT_INSTALLED,
    TASK_UNVERIFIED,
)
from policies.trace import Trace
from traces.importers._bfcl_releases import release_task, release_tasks
from traces.importers.bfcl import load_tasks, recorded_turns
from traces.samples.bfcl import build_record

from .test_bfcl_drift import V3, audit, drifted, imported

pytest.importorskip("bfcl_eval")

V4 = "result/some-model-FC/BFCL_v4_multi_turn_base_result.json"
REAL_2024 = Path(__file__).resolve().parents[1] / "data" / "real" / "bfcl-v3-2024"
#: v3 tasks whose user turns are the installed v4 task's but whose ground truth is not; one v3
#: version only
SAME_TURNS_OTHER_TRUTH = "multi_turn_base_8"
#: a task whose v3 releases have the same user turns and different ground truth
TRUTH_CHANGED_IN_V3 = "multi_turn_base_21"
#: a task whose v3 releases have different user turns, each with its own ground truth
TURNS_CHANGED_IN_V3 = "multi_turn_base_151"


def v3_run(tid: str, version: int = -1, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run that did what the v3 task's ground truth says, as that release recorded it."""
    v = release_tasks("v3")[tid][version]
    task = {**v["task"], "id": tid}
    record, _ = build_record(task, perturb=False, **kwargs)
    return record, v


def test_the_kept_v3_tasks_are_every_v3_release_s() -> None:
    kept = release_tasks("v3")
    assert len(kept) == 800
    releases = {r for vs in kept.values() for v in vs for r in v["releases"]}
    assert releases == {
        "2025.6.8-2025.6.15",
        "2025.6.16-2025.6.30.1",
        "2025.6.30.2-2025.7.9",
        "2025.7.17-2025.8.6.2",
    }
    assert release_tasks("v2") is None


def test_a_v3_run_is_scored_against_its_release_s_ground_truth() -> None:
    record, v = v3_run(SAME_TURNS_OTHER_TRUTH)
    installed = load_tasks()[SAME_TURNS_OTHER_TRUTH]
    assert v["task"]["question"] == installed["question"]  # same user turns ...
    assert v["task"]["ground_truth"] != installed["ground_truth"]  # ... another ground truth
    events, report = imported(record)
    header = events[0]
    assert header["labels"]["ground_truth"] == v["task"]["ground_truth"]
    assert header["task"]["benchmark"] == "bfcl-v3"
    assert header["meta"]["task_release"] == {"release": "v3", "bfcl_eval": v["releases"]}
    assert report.flags["scored_against_recorded_release"] == 1
    result = audit(events)
    assert result.actor_success is True and result.unknown_reason is None


def test_the_same_run_scored_against_the_installed_task_would_fail() -> None:
    """What the rule prevents: the v3 run under a v4 file name is scored against v4's ground
    truth, which it never saw, and fails."""
    record, _ = v3_run(SAME_TURNS_OTHER_TRUTH)
    events, _ = imported(record, name=V4)
    assert "task_release" not in events[0]["meta"]
    assert audit(events).actor_success is False


def test_ground_truth_that_changed_between_v3_releases_makes_the_outcome_unknown() -> None:
    record, _ = v3_run(TRUTH_CHANGED_IN_V3)
    events, report = imported(record)
    changed = events[0]["meta"]["ground_truth_changed"]
    assert changed["recorded_release"] == "v3" and len(changed["bfcl_eval"]) >= 2
    assert report.flags["ground_truth_changed"] == 1
    result = audit(events)
    assert result.actor_success is None and result.transition == "unknown"
    assert result.unknown_reason == GROUND_TRUTH_CHANGED


def test_user_turns_tell_which_v3_release_a_run_comes_from() -> None:
    versions = release_tasks("v3")[TURNS_CHANGED_IN_V3]
    for k, v in enumerate(versions):
        record, _ = v3_run(TURNS_CHANGED_IN_V3, k)
        events, _ = imported(record)
        header = events[0]
        assert header["meta"]["task_release"]["bfcl_eval"] == v["releases"]
        assert header["labels"]["ground_truth"] == v["task"]["ground_truth"]
        assert "ground_truth_changed" not in header["meta"]
        assert audit(events).actor_success is True


def test_without_recorded_turns_no_release_is_known() -> None:
    one = release_tasks("v3")[SAME_TURNS_OTHER_TRUTH]
    assert release_task(one, []).status == "unverified"
    several = release_tasks("v3")[TURNS_CHANGED_IN_V3]
    assert release_task(several, []).status == "unverified"
    record, _ = v3_run(TURNS_CHANGED_IN_V3, 0)
    assert release_task(several, recorded_turns(record["inference_log"])).status == "matched"
    record, _ = v3_run(SAME_TURNS_OTHER_TRUTH)
    assert release_task(one, recorded_turns(record["inference_log"])).status == "matched"


def test_a_v3_run_without_an_inference_log_is_not_scored() -> None:
    """A real v3 file written before the first PyPI release (gpt-4o-2024-08-06-FC, NOTICE in
    tests/data/real/bfcl-v3-2024): no inference log, and its tasks are none of the kept
    versions' — its own score file shows the user turns it was run on."""
    path = REAL_2024 / "gpt-4o-2024-08-06-FC" / "BFCL_v3_multi_turn_base_result.json"
    run_turn0 = {
        "multi_turn_base_3": "As part of my latest photography project, I need to gather files "
        "that have 'test' in their name from a specific folder in my current directory. Could "
        "you help me locate those?",
        "multi_turn_base_4": "Could you kindly place the report in the /tmp directory or show me "
        "the list of files in tmp if already there?",
    }
    for line in path.read_bytes().splitlines():
        record = orjson.loads(line)
        assert "inference_log" not in record
        kept = [v["task"]["question"][0][0]["content"] for v in release_tasks("v3")[record["id"]]]
        assert run_turn0[record["id"]] not in kept
        events, report = imported(record, name=str(path))
        assert events[0]["meta"]["task_unverified"] == {"recorded_release": "v3", "compared": 0}
        assert "task_release" not in events[0]["meta"]
        assert report.flags["task_version_unverified"] == 1
        assert trace_flags(Trace.from_events(events))["task_unverified"] == 1
        result = audit(events)
        assert result.actor_success is None and result.guarded_success is None
        if record["id"] == "multi_turn_base_4":  # calls tools: TwinCheck decides, on nothing known
            assert result.transition == "unknown" and result.unknown_reason == TASK_UNVERIFIED
        else:  # answered in text only
            assert result.transition == "not_applicable"


def test_turns_no_v3_release_has_are_drift() -> None:
    record, _ = v3_run(SAME_TURNS_OTHER_TRUTH)
    events, report = imported(drifted(record))
    drift = events[0]["meta"]["task_drift"]
    assert drift["turns"] == [1] and drift["recorded_release"] == "v3"
    assert report.flags["task_differs_from_release"] == 1
    assert audit(events).unknown_reason == TASK_DRIFT


def test_a_test_id_the_run_s_release_lacks_is_unknown() -> None:
    record, _ = v3_run(SAME_TURNS_OTHER_TRUTH)
    record = copy.deepcopy(record)
    record["id"] = "multi_turn_base_9999"
    events, report = imported(record)
    assert report.flags["task_not_found"] == 1
    assert "tests not in the v3 release's bfcl-eval data" in report.unmapped
    assert audit(events).unknown_reason == TASK_NOT_INSTALLED


def test_an_unkept_release_is_checked_against_the_installed_task() -> None:
    record, _ = build_record(load_tasks()["multi_turn_base_0"], perturb=False)
    name = V3.replace("v3", "v2")
    events, report = imported(record, name=name)
    assert (
        events[0]["meta"]["installed_release"] == "v4" and "task_release" not in events[0]["meta"]
    )
    assert events[0]["task"]["benchmark"] == "bfcl-v4"
