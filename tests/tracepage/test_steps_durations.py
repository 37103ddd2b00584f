"""The steps tree of a trace whose source records durations but no times: BFCL's latency per
model call, on real records (gpt-4o-2024-08-06-FC, NOTICE in tests/data/real/bfcl-v3-2024).
Each step shows its own duration and tokens, a turn the sum of its steps' durations (said as a
sum), no bars; the trace's stored totals are the same sums, counted once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from auditor.trace_page import step_rows, steps
from tests.importers._helpers import run, traces_of
from tests.tracepage.test_steps import ev, turn_events
from tests.tracepage.test_steps_page import rows, steps_html
from traces.models import Trace
from traces.services import upload_create, upload_process

REAL = (
    Path(__file__).resolve().parents[1] / "data" / "real" / "bfcl-v3-2024"
    / "gpt-4o-2024-08-06-FC" / "BFCL_v3_multi_turn_base_result.json"
)  # fmt: skip
# multi_turn_base_4's latency (s) and tokens per model call, per turn, as the file records them
LATENCY = [
    [1.312840223312378, 0.7104580402374268, 1.0072169303894043, 0.5807168483734131,
     0.5667290687561035],
    [0.7277441024780273, 0.5375349521636963, 0.6728589534759521, 0.9746408462524414],
    [1.0375092029571533, 0.6786458492279053],
]  # fmt: skip


def bfcl_events() -> list[dict[str, Any]]:
    events, report = run("bfcl", REAL)
    assert report.errors == []
    return traces_of(events)["bfcl:multi_turn_base_4"]


def test_each_step_shows_its_duration_and_tokens_and_a_turn_their_sum():
    tree = steps.build(bfcl_events())
    assert not tree.has_timing and tree.lo is None  # no times: no axis, no bars
    assert tree.summed == pytest.approx(sum(map(sum, LATENCY)) * 1000)
    got, _ = step_rows.rows(tree)
    assert [(r["label"], r["name"], r["duration"], r["tokens"]) for r in got] == [
        ("Turn 0", "", "4.18 s", "10,309 / 80"),
        ("message", "user", "", ""),
        ("tool_call", "ls", "1.31 s", "1,989 / 14"),
        ("tool_call", "mv", "710 ms", "2,020 / 20"),
        ("tool_call", "mkdir", "1.01 s", "2,072 / 14"),
        ("tool_call", "mv", "581 ms", "2,094 / 18"),
        ("message", "assistant", "567 ms", "2,134 / 14"),
        ("Turn 1", "", "2.91 s", "8,941 / 77"),
        ("message", "user", "", ""),
        ("tool_call", "sort", "728 ms", "2,182 / 16"),
        ("tool_call", "cd", "538 ms", "2,221 / 13"),
        ("tool_call", "sort", "673 ms", "2,250 / 15"),
        ("message", "assistant", "975 ms", "2,288 / 33"),
        ("Turn 2", "", "1.72 s", "4,837 / 75"),
        ("message", "user", "", ""),
        ("tool_call", "post_tweet", "1.04 s", "2,359 / 51"),
        ("message", "assistant", "679 ms", "2,478 / 24"),
    ]
    assert all(r["bar"] == "" for r in got)
    turns = [r for r in got if r["label"].startswith("Turn")]
    assert {r["duration_title"] for r in turns} == {"the durations of the steps under it, added up"}
    assert {r["duration_title"] for r in got if not r["label"].startswith("Turn")} == {""}
    summary = step_rows.summary(tree)
    assert summary["summed"] == "8.81 s" and summary["tokens"] == "24,087 / 232"


def test_with_times_a_parent_s_duration_is_its_extent_not_a_sum():
    """A step with a time puts the tree on the axis: a parent without its own timing spans its
    steps (the existing rule), it never adds durations up."""
    tree = steps.build(
        [
            ev(1, "message", turn=0, role="user"),
            ev(2, "tool_call", turn=0, name="a", call_id="a", ts="2026-01-31T12:00:00Z",
               duration_ms=1000),
            ev(3, "tool_call", turn=0, name="b", call_id="b", ts="2026-01-31T12:00:00.500Z",
               duration_ms=1000),
        ]
    )  # fmt: skip
    got, _ = step_rows.rows(tree)
    turn = got[0]
    assert turn["label"] == "Turn 0" and turn["duration"] == "1.50 s"  # 0 → 1.5 s, not 2 s
    assert turn["duration_title"] == "" and "derived" in turn["bar"]


def test_without_durations_nothing_is_summed():
    tree = steps.build(turn_events())
    assert tree.summed is None and step_rows.summary(tree)["summed"] == ""
    got, _ = step_rows.rows(tree)
    assert {r["duration"] for r in got} == {""}


@pytest.mark.django_db
def test_the_page_shows_the_durations_and_the_stored_totals_count_once(client, alice, project):
    upload, _ = upload_create(
        project=project, fileobj=REAL.read_bytes(), filename=REAL.name, source="cli",
        enqueue=False,
    )  # fmt: skip
    upload = upload_process(upload_id=upload.pk)
    assert upload is not None and upload.status == "done", upload and upload.errors
    trace = Trace.objects.get(project=project, external_id__endswith="multi_turn_base_4")
    # the trace's columns: the lists' sums, once (the header states none of them)
    assert trace.duration_ms == pytest.approx(sum(map(sum, LATENCY)) * 1000)
    assert (trace.input_tokens, trace.output_tokens, trace.total_tokens) == (24087, 232, 24319)
    client.force_login(alice)
    html = client.get(trace.get_absolute_url()).content.decode()
    part = steps_html(html)
    assert "records durations but no times" in part and "carries no timing" not in part
    assert "wf-no-axis" in part and "wf-untimed" not in part and "wf-bar" not in part
    assert "8.81 s" in part  # the heading: the steps' durations added up
    ls = next(r for r in rows(html) if ">ls<" in r)
    assert "1.31 s" in ls and "1,989 / 14" in ls
    turn0 = next(r for r in rows(html) if "Turn 0" in r)
    assert "4.18 s" in turn0 and 'title="the durations of the steps under it, added up"' in turn0
