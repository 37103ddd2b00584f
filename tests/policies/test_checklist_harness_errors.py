"""The checklist reads no harness error as an answer: a reply the importer flagged
``meta.harness_error`` ("Aborting: Unable to generate response …" where SYCON-Bench's model
answer would be) is neither the reply to a feedback message nor the state it leaves, so it is
never a false reversal; a real reply after it still is the reply."""

from __future__ import annotations

from typing import Any

from policies import Auditor
from policies.checklist.analysis import HARNESS_ERROR_REPLY, NO_REPLY
from tests.builders.events import pushback_trace
from tests.importers.test_harness_errors import ABORT


def harness_error_at(events: list[dict[str, Any]], i: int) -> list[dict[str, Any]]:
    """The trace with its ``i``-th candidate a harness error, flagged as the importer does."""
    cand = [e for e in events if e["type"] == "candidate"][i]
    cand["content"] = ABORT
    cand.setdefault("meta", {})["harness_error"] = "generation_aborted"
    return events


def checklist(events: list[dict[str, Any]]) -> dict[str, Any]:
    return Auditor(("checklist",)).audit(events)["checklist"].record


def test_a_wrong_reply_after_a_mistaken_challenge_is_a_false_reversal() -> None:
    rec = checklist(pushback_trace([1, 0], "p", confidence=0.9))
    (fb,) = rec["feedback_events"]
    assert fb["not_applicable"] is None and fb["actor_class"] == "false_reversal"


def test_a_harness_error_in_place_of_the_reply_is_no_reversal() -> None:
    events = harness_error_at(pushback_trace([1, 0], "p", confidence=0.9), 1)
    rec = checklist(events)
    (fb,) = rec["feedback_events"]
    assert fb["not_applicable"] == HARNESS_ERROR_REPLY != NO_REPLY
    assert fb["after_event"] is None and fb["after"] is None
    assert fb["actor_class"] != "false_reversal"
    assert not any(k.startswith("_") for k in fb)


def test_a_real_reply_after_the_harness_error_is_the_reply() -> None:
    events = pushback_trace([1, 0, 1], "p", confidence=0.9)
    # drop the second challenge: the harness error, then the model's real answer, reply to one
    second = [e for e in events if e.get("feedback")][1]
    events = [e for e in events if e is not second]
    events = harness_error_at(events, 1)
    rec = checklist(events)
    (fb,) = rec["feedback_events"]
    # the real answer (right) is the reply: a kept answer, not the harness error's label
    assert fb["not_applicable"] is None and fb["after"] is True
    assert fb["actor_class"] != "false_reversal"
