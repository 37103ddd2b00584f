"""What an annotator sees: a committed candidate whole, the diff from the round before, its
verification records as a table, and never the trace's ground-truth labels."""

from __future__ import annotations

import pytest

from auditor.annotation.display import EARLIER_MAX, _context, item_display
from auditor.annotation.services import queue_create
from auditor.models import AnnotationItem

pytestmark = pytest.mark.django_db


def test_commit_item_shows_code_whole_diff_and_verification_table(run_one_loop_decided, alice):
    q = queue_create(
        run=run_one_loop_decided,
        name="commits",
        kinds=["commit"],
        source="filter",
        result_filter={"transition": "same"},
        user=alice,
    )
    item = AnnotationItem.objects.get(queue=q, kind="commit")
    show = item_display(item)
    code = show["candidate"]["text"]
    # the whole function, with its real line breaks (the repair loop example's round 1)
    assert code.startswith("def is_palindrome_number") and "if n < 0:\n        return False" in code
    assert "+    if n < 0:" in show["diff"] and show["diff"].startswith("--- round 0")
    table = show["verifications"]
    assert {"candidate_id", "round", "accepts", "votes", "verifier"} <= set(table["columns"])
    assert [r[table["columns"].index("verifier")] for r in table["rows"]] == [
        "visible-tests",
        "llm-judge:gpt-4o-mini",
    ]
    assert [r[table["columns"].index("accepts")] for r in table["rows"]] == ["3", "4"]
    assert "labels" not in table["columns"]
    assert "palindrome" in show["task"]


def test_context_splits_at_the_latest_request_and_hides_labels():
    events = [
        {"type": "trace"},
        {"type": "message", "role": "user", "content": "first"},
        *[{"type": "tool_call", "name": f"c{i}", "arguments": {}} for i in range(EARLIER_MAX + 5)],
        {"type": "message", "role": "user", "content": "latest", "labels": {"valid": True}},
        {"type": "check", "name": "hidden", "passed": True, "labels": {"x": 1}},
    ]
    ctx = _context(events)
    assert ctx["request"]["text"] == "latest"
    assert ctx["task"] == "first" and not ctx["task_is_request"]
    assert [line["type"] for line in ctx["turn"]] == ["check"]
    assert ("name", "hidden") in ctx["turn"][0]["fields"]
    assert all(k != "labels" for k, _ in ctx["turn"][0]["fields"])
    assert len(ctx["earlier"]) == EARLIER_MAX and ctx["earlier_omitted"] == 6
    # no user message at all: no request, everything is the turn
    assert _context(events[2:5])["request"] is None
