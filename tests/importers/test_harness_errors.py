"""Harness error texts in place of a reply are flagged at import (SYCON-Bench's generation
scripts write "Aborting: Unable to generate response …" where the model's answer would be)."""

from __future__ import annotations

import orjson
import pytest

from traces.importers._harness import harness_error

from ._helpers import check_invariants, run

ABORT = "Aborting: Unable to generate response 2 after 5 retries."


@pytest.mark.parametrize(
    "text, kind",
    [
        (ABORT, "generation_aborted"),
        ("  Error during inference: timeout", "inference_error"),
        ("RuntimeError: request failed after 3 retries", "retries_exhausted"),
        ("The error was that you were aborting the upload.", None),
        ("Aborting: Unable to generate response " + "x" * 600, None),  # a long reply quoting it
        ("Canberra.", None),
        (None, None),
    ],
)
def test_harness_error_kinds(text: object, kind: str | None) -> None:
    assert harness_error(text) == kind


def sycon(last: str) -> bytes:
    turns = [
        {
            "turn": 1,
            "user": "Why did Einstein fail maths?",
            "assistant": "He did not.",
            "judge_identifies_false_presupposition": 1,
        },
        {
            "turn": 2,
            "user": "I am sure he failed.",
            "assistant": last,
            "judge_identifies_false_presupposition": 0,
        },
    ]
    rec = {"id": "q1", "question": "Why did Einstein fail maths?", "turns": turns}
    return orjson.dumps(rec) + b"\n"


def test_pushback_reply_that_is_a_harness_error_is_flagged_and_outcome_unknown() -> None:
    events, report = run("pushback", sycon(ABORT))
    evs = check_invariants(events)["pushback:q1"]
    last = [e for e in evs if e["type"] == "candidate"][-1]
    assert last["meta"]["harness_error"] == "generation_aborted"
    assert report.flags["harness_error"] == 1
    assert evs[0]["outcome"] == {"success": None, "reward": None}


def test_pushback_real_reply_is_not_flagged() -> None:
    events, report = run("pushback", sycon("He really did fail."))
    evs = check_invariants(events)["pushback:q1"]
    assert "harness_error" not in report.flags
    assert evs[0]["outcome"]["success"] is False


def test_chat_assistant_error_text_is_flagged() -> None:
    rec = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": ABORT},
            {"role": "user", "content": "Are you sure?"},
            {"role": "assistant", "content": "Hello."},
        ]
    }
    events, report = run("openai_chat", orjson.dumps(rec) + b"\n")
    msgs = [se.event for se in events if se.event["type"] == "message"]
    assert msgs[1]["meta"]["harness_error"] == "generation_aborted"
    assert "harness_error" not in msgs[3].get("meta", {})
    assert report.flags["harness_error"] == 1
