"""The `ta_export` importer on export lines shaped from real SYCON traces: events come back
unchanged, bad lines are errors with line and path, fuzzed lines never crash it."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_examples
from traces.importers import detect

from ._helpers import DATA, assert_no_internal_errors, run, traces_of
from .fuzz import mutate

SYCON = DATA / "sycon-bench" / "false_presuppositions_gpt-4o_prompt0.jsonl"


def export_lines(n: int = 5) -> list[dict]:
    head = b"".join(SYCON.read_bytes().splitlines(keepends=True)[:n])
    events, report = run("pushback", head)
    assert report.errors == []
    return [
        {"trace": {"trace_id": tid, "pk": i}, "events": evs, "decisions": [], "annotations": []}
        for i, (tid, evs) in enumerate(traces_of(events).items())
    ]


def blob(lines: list[dict]) -> bytes:
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


def test_export_lines_give_back_their_events_unchanged():
    lines = export_lines()
    data = blob(lines)
    assert detect(data[:65536], "") == "ta_export"
    # A first line longer than the detection head is still detected.
    assert detect(data[:300], "") == "ta_export"
    events, report = run("ta_export", data)
    assert report.errors == []
    assert traces_of(events) == {x["trace"]["trace_id"]: x["events"] for x in lines}
    assert [se.line for se in events] == [i + 1 for i, x in enumerate(lines) for _ in x["events"]]


def test_bad_lines_are_errors_with_line_and_path():
    lines = export_lines(4)
    lines[0]["events"][2]["trace_id"] = "other"
    lines[1]["events"] = []
    lines[2]["trace"] = {"pk": 1}
    events, report = run("ta_export", blob(lines) + blob(lines[3:]))
    got = [(e.line, e.path) for e in report.errors]
    assert got == [
        (1, "$.events[2].trace_id"),
        (2, "$.events"),
        (3, "$.trace.trace_id"),
        (5, "$.trace.trace_id"),  # the same trace twice
    ]
    assert "found it again (first on line 4)" in report.errors[-1].message
    assert set(traces_of(events)) == {lines[3]["trace"]["trace_id"]}


@settings(
    max_examples=fuzz_examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_fuzz_never_raises_and_errors_name_line_and_path(data):
    line = export_lines(1)[0]
    events, report = run("ta_export", mutate(data, line))
    # Events pass through as exported (the ingest validates them as v1, like native uploads):
    # what the importer guarantees is no crash, and only events of an intact line.
    assert_no_internal_errors(report)
    assert not (events and report.errors)
    assert all(se.event["trace_id"] == line["trace"]["trace_id"] for se in events)
    for err in report.errors:
        assert err.line >= 0 and err.path.startswith("$")
