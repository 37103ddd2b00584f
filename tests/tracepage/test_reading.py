"""The trace page reads consistently: one step numbering in the side-by-side, gap labels that
match what happened, the timeline grouped by turn, and one outcome word in header and list."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from auditor.models import AuditResult, AuditRun
from auditor.trace_page.alignment import side_by_side
from auditor.trace_page.events import event_view
from auditor.trace_page.turns import group_by_turn
from tests.builders.events import lock_unlock_trace
from tests.tracepage.conftest import ingest


def call(name: str) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "arguments": {}}


def test_step_numbers_agree_with_divergence_and_counts():
    actor = [call(f"s{i}") for i in range(20)]
    guarded = actor[:10] + [call("twin"), call("extra")] + actor[11:13]
    sbs = side_by_side(actor, guarded, prefix_window=4)
    # 10 identical steps (0-9, as the timeline numbers events); the divergence is step 10,
    # and the first row after the mark says 10
    assert sbs.prefix == 10
    assert sbs.rows[0].step == 10 and sbs.rows[0].actor.index == 10
    assert [r.step for r in sbs.prefix_rows] == [6, 7, 8, 9]
    assert all(r.step == r.actor.index for r in sbs.prefix_rows)
    steps = [r.step for r in sbs.rows + sbs.tail_rows]
    assert steps == list(range(10, 10 + len(steps)))


def test_gap_labels_match_the_row_kind():
    actor = [call("a"), call("b"), call("c")]
    guarded = [call("a"), call("b"), call("x"), call("y"), call("c")]
    rows = side_by_side(actor, guarded).rows
    added = [r for r in rows if r.kind == "guarded"]
    assert added, [r.kind for r in rows]
    (actor_side, gap, label), (g_side, g_gap, g_label) = added[0].cells
    assert actor_side is None and "dropped" not in gap and "added by the guard" in gap
    assert g_side is not None and label == "Actor" and g_label == "Guarded"
    # An actor step after the guarded trajectory's end says why it was not run, by continuation.
    dropped = side_by_side([call("a"), call("b")], [call("a")], continuation="truncated").rows
    assert dropped[0].kind == "actor"
    assert dropped[0].cells[1][1].startswith("not run: the guarded trajectory stops at")
    # An actor step the guarded run went past is "skipped", not "not run".
    skipped = side_by_side([call("a"), call("b"), call("c")], [call("a"), call("c")]).rows
    assert [r.kind for r in skipped] == ["actor", "same"], [r.kind for r in skipped]
    assert skipped[0].cells[1][1].startswith("skipped: the guarded run went on")


def test_timeline_groups_by_turn():
    payloads = [
        {"type": "trace"},
        {"type": "message", "role": "user", "content": "first ask", "turn": 0},
        {"type": "tool_call", "name": "x", "turn": 0},
        {"type": "message", "role": "user", "content": "second ask", "turn": 1},
        {"type": "note"},  # no turn: joins turn 1
    ]
    items = [
        {"view": event_view(p, i), "turn": p.get("turn"), "role": p.get("role"), "seq": i}
        for i, p in enumerate(payloads)
    ]
    out = group_by_turn(items)
    heads = [i["turn_head"] for i in out if "turn_head" in i]
    assert [(h["turn"], h["count"]) for h in heads] == [(None, 1), (0, 2), (1, 2)]
    assert heads[1]["request"].endswith("first ask") or "first ask" in heads[1]["request"]
    assert out[4]["turn"] == 1


@pytest.mark.django_db
def test_one_outcome_word_in_header_and_list(client, alice, project):
    ingest(project, lock_unlock_trace(success=None))
    client.force_login(alice)
    trace = project.traces.get()
    page = client.get(trace.get_absolute_url()).content.decode()
    assert (
        '<span class="badge outcome">unknown</span> <span class="muted small outcome-src"' in page
    )
    assert ">recorded</span>" in page
    run = AuditRun.objects.create(project=project, policies=["twincheck"], status="done")
    AuditResult.objects.create(
        run=run, trace=trace, policy="twincheck", applied=True, actor_success=False,
        guarded_success=None,
        transition="unknown", continuation="truncated", record={},
    )  # fmt: skip
    page = client.get(trace.get_absolute_url()).content.decode()
    header = page[page.index('id="trace-outcome"') :][:400]
    assert ">failure</span>" in header and f"audit #{run.pk}" in header
    listing = client.get(reverse("auditor:trace-list", args=[project.pk])).content.decode()
    cell = listing[listing.index('class="outcome-cell"') :][:400]
    assert ">failure</span>" in cell and f"audit #{run.pk}" in cell
