"""The tasks of an earlier bfcl-eval release, for the result files it wrote.

A result file's name says the release that wrote it (`BFCL_v3_multi_turn_base_result.json`);
the installed package holds only its own release's tasks, and between releases tasks got other
user turns, other ground truth or another initial state under the same test id. A run is scored
against the task it was run on: ``bfcl_releases/`` keeps the multi-turn tasks of every PyPI
release that names its data v3 (NOTICE there; `bench/bfcl_release_tasks.py` writes them), each
test id with its distinct versions and the releases that ship each.

The v3 releases themselves disagree (four different task sets from 2025.6.8 to 2025.8.6.2), and a
result file does not say which of them wrote it. `release_task` reads it from the run's recorded
user turns: the versions whose user turns the run recorded are the ones it may have been run on;
when they all score alike (same ground truth, initial state, classes and functions) the run is
scored against that task, when they do not the ground truth changed between the releases the run
may come from and its outcome is unknown with that reason; when none has its user turns the task
drifted.

A run that records no user turn to compare (no ``inference_log``) cannot be tied to any version:
v3 result files were also written before the first kept release, by the leaderboard's own
repository, with tasks that none of the kept versions has (other user turns, another initial
state and ground truth under the same test id). Its task is *unverified* and its outcome unknown
with that reason, never scored against a kept version it may not come from.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import orjson

from ._bfcl_drift import drifted_turns

DATA = Path(__file__).resolve().parent / "bfcl_releases"
#: The releases whose tasks are kept, each with its file.
RELEASE_FILES = {"v3": "v3_multi_turn.jsonl.gz"}
#: What is compared between versions a run may come from: all but the user turns.
SCORED_FIELDS = (
    "ground_truth",
    "initial_config",
    "involved_classes",
    "missed_function",
    "excluded_function",
)


@cache
def release_tasks(release: str) -> dict[str, list[dict]] | None:
    """{test id: [{"releases": [...], "task": {...}}, ...]} of a kept release, else None."""
    name = RELEASE_FILES.get(release)
    if name is None or not (DATA / name).exists():
        return None
    with gzip.open(DATA / name, "rb") as f:
        return {r["id"]: r["versions"] for r in map(orjson.loads, f) if r}


@dataclass(frozen=True, slots=True)
class ReleaseMatch:
    """Which of a test id's versions a run was made on: ``status`` "matched" (``task`` the one
    to score against), "ground_truth_changed" (the versions it may come from score differently),
    "drift" (no version has its user turns) or "unverified" (the run records no user turn to
    compare); ``releases`` the releases it may come from; ``turns`` (drift) the turns that
    differ from the last release's task."""

    status: str
    task: dict | None
    releases: tuple[str, ...]
    compared: int
    turns: tuple[int, ...] = ()


def release_task(versions: list[dict], turn_logs: list[dict]) -> ReleaseMatch:
    """The version of a task the run with ``turn_logs`` (the inference log's turns) was made on
    (see the module docstring). Without a recorded user turn to compare, none is known."""
    possible = []
    compared = 0
    differ: list[int] = []
    for v in versions:
        differ, n = drifted_turns(turn_logs, v["task"].get("question") or [])
        compared = max(compared, n)
        if not differ:
            possible.append(v)
    if possible and not compared:
        return ReleaseMatch("unverified", None, (), 0)
    if not possible:
        return ReleaseMatch("drift", None, (), compared, tuple(differ))
    releases = tuple(r for v in possible for r in v["releases"])
    scored = {
        orjson.dumps([v["task"].get(k) for k in SCORED_FIELDS], option=orjson.OPT_SORT_KEYS)
        for v in possible
    }
    if len(scored) > 1:
        return ReleaseMatch("ground_truth_changed", possible[-1]["task"], releases, compared)
    return ReleaseMatch("matched", possible[-1]["task"], releases, compared)
