"""A candidate stopped at the sandbox's wall-clock limit did not get to finish: it is run once
more, and stopped again it is unknown ("wall-clock limit"), never failed — so an audit gives the
same labels on an idle and on a busy machine. No bubblewrap needed: the runs are stand-ins."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from policies.sandbox import ExecResult, SandboxSettings, code_tests
from policies.sandbox.code_tests import (
    WALL_CLOCK,
    _label,
    execute_hidden_tests,
    reusable,
    stopped_by_wall_clock,
)

ON = SandboxSettings(enabled=True)


def result(status: Any, detail: str = "") -> ExecResult:
    return ExecResult(status, 0, 0.1, detail, "", "", True)


TIMEOUT = result("timeout", "killed at the wall-clock limit")
CPU = result("failed", "CPU time limit")


def trace() -> list[dict[str, Any]]:
    return [
        {
            "trace_id": "w",
            "type": "trace",
            "task": {"id": "w", "entry_point": "f"},
            "labels": {"hidden_tests": "assert f() == 1\n"},
        },
        {"trace_id": "w", "type": "candidate", "candidate_id": "c0", "content": "def f(): ..."},
    ]


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[ExecResult]]:
    """The results the stand-in sandbox gives, in order."""
    queue: list[ExecResult] = []

    def fake(source: str, settings: SandboxSettings, *, marker: str | None = None) -> ExecResult:
        return queue.pop(0)

    monkeypatch.setattr(code_tests, "run_program", fake)
    yield queue
    assert queue == []  # every run the test expected happened


def test_the_wall_clock_is_not_the_cpu_limit() -> None:
    assert stopped_by_wall_clock(TIMEOUT) and not stopped_by_wall_clock(CPU)
    assert _label(CPU).valid is False  # a loop stopped by the CPU limit: a failure
    lab = _label(TIMEOUT)
    assert lab.valid is None and lab.detail.startswith(WALL_CLOCK)


def test_a_run_stopped_by_a_busy_machine_is_run_again_and_labelled_by_the_second_run(
    runs: list[ExecResult],
) -> None:
    runs += [TIMEOUT, result("passed")]
    labels, stats = execute_hidden_tests([trace()], ON)
    assert labels[("w", "c0")].valid is True
    assert stats["retried at the wall-clock limit"] == 1 and stats["passed"] == 1


def test_a_run_stopped_at_the_wall_clock_twice_is_unknown_and_not_stored(
    runs: list[ExecResult],
) -> None:
    runs += [TIMEOUT, TIMEOUT]

    class Store:
        kept: dict[str, tuple[bool, str]] = {}

        def get_many(self, keys: Any) -> dict[str, tuple[bool, str]]:
            return {}

        def put_many(self, outcomes: Any) -> None:
            self.kept.update(outcomes)

    store = Store()
    labels, stats = execute_hidden_tests([trace()], ON, store=store)
    lab = labels[("w", "c0")]
    assert lab.valid is None and lab.detail == f"{WALL_CLOCK}: killed at the wall-clock limit"
    assert stats["timeout"] == 1 and store.kept == {}


def test_a_failure_stopped_by_the_cpu_limit_is_not_run_again(runs: list[ExecResult]) -> None:
    runs += [CPU]
    labels, stats = execute_hidden_tests([trace()], ON)
    assert labels[("w", "c0")].valid is False and "retried at the wall-clock limit" not in stats


def test_a_stored_failure_that_was_a_wall_clock_kill_is_not_reused() -> None:
    stored = {
        "a": (False, "timeout: killed at the wall-clock limit"),
        "b": (False, "failed: CPU time limit"),
        "c": (True, "hidden tests passed"),
        "d": (False, f"{WALL_CLOCK}: killed at the wall-clock limit"),
    }
    assert set(reusable(stored)) == {"b", "c"}
