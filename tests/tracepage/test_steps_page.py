"""The steps tree on the trace page: a v1 trace with timing, tokens and cost; one without any
timing; an OTLP trace from the real OpenTelemetry SDK, nested by its spans; a long trace, whose
tree is bounded and linked to the timeline window and the side-by-side."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.importers.otlp_samples import openinference_spans, otlp_json
from tests.tracepage.conftest import hostile_trace, ingest, timed_trace
from tests.tracepage.test_trace_page import big_trace
from traces.models import Trace
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db


def steps_html(html: str) -> str:
    start = html.index('<section id="steps"')
    return html[start : html.index("</section>", start)]


def rows(html: str) -> list[str]:
    """The rows of the steps tree (not its heading row), as HTML."""
    part = steps_html(html)
    return re.findall(r'class="wf-row(?! wf-head).*?</span></(?:summary|div)>', part, re.S)


def test_a_timed_trace_shows_bars_durations_tokens_and_cost(client, alice, project):
    client.force_login(alice)
    ingest(project, timed_trace())
    trace = Trace.objects.get(external_id="timed")
    html = client.get(trace.get_absolute_url()).content.decode()
    part = steps_html(html)
    # the whole trace: 13.81 s from the first start to the last end, tokens in / out, cost
    assert "12 after the header · 13.8 s · " in part
    assert "6,232 / 245 tokens" in part and "$0.020" in part
    assert "carries no timing" not in part and "no bar" not in part
    found = rows(html)
    assert len(found) == 2 + 12  # two turns, twelve events
    flights = next(r for r in found if "search_flights" in r and "tool_call" in r)
    assert "2.35 s" in flights and 'href="#ev-3"' in flights
    assert 'style="left:9.413%;width:17.017%"' in flights  # 1.30 s .. 3.65 s of 13.81 s
    booking = next(r for r in found if "tool_result" in r and "book_flight" in r)
    assert "error" in booking and " err" in booking  # the failed booking stands out
    turn0 = found[0]
    assert "Turn 0" in turn0 and "2,740 / 182" in turn0 and "$0.0098" in turn0
    # the axis: 0 to 13.8 s, in quarters
    assert re.findall(r'class="wf-tick" style="left:([\d.]+)%">([^<]+)<', part) == [
        ("0.000", "0"),
        ("25.000", "3.45 s"),
        ("50.000", "6.91 s"),
        ("75.000", "10.4 s"),
        ("100.000", "13.8 s"),
    ]
    # nested <details>, balanced (the box, two turns, two messages with calls, three calls with
    # results); a small tree opens fully
    assert part.count("<details") == part.count("</details>") == 1 + 2 + 2 + 3
    assert part.count('<details class="wf-node" open>') == 2 + 2 + 3


def test_a_trace_without_timing_says_so_and_draws_no_bar(client, alice, project):
    client.force_login(alice)
    ingest(project, hostile_trace())
    trace = Trace.objects.get(external_id="hostile")
    part = steps_html(client.get(trace.get_absolute_url()).content.decode())
    assert "This trace's source carries no timing" in part
    assert "wf-bar" not in part and "wf-untimed" in part
    # counts only
    assert "Turn 0" in part and 'class="badge" title="events under this step">7<' in part


def test_an_otlp_trace_nests_its_steps_by_span(client, alice, project):
    client.force_login(alice)
    upload, _ = upload_create(
        project=project,
        fileobj=otlp_json(openinference_spans(("Paris",))),
        filename="spans.json",
        source="cli",
        enqueue=False,
    )
    assert upload_process(upload_id=upload.pk).status == "done"
    trace = Trace.objects.get(project=project)
    part = steps_html(client.get(trace.get_absolute_url()).content.decode())
    assert "Span tree, nested by the trace's OpenTelemetry parent links" in part
    labels = re.findall(r'class="wf-type">([^<]+)</span> <span class="wf-what">([^<]*)<', part)
    assert labels == [
        ("AGENT", "agent"),
        ("LLM", "ChatCompletion"),
        ("message", "system"),
        ("message", "user"),
        ("tool_call", "get_weather"),
        ("TOOL", "get_weather"),
        ("tool_result", "get_weather"),
        ("LLM", "ChatCompletion"),
        ("message", "assistant"),
    ]
    # the spans' own clocks place them: the agent spans the axis, the others a bar each
    spans = re.findall(r'<summary class="wf-row k-span[^"]*">.*?style="(left:[^"]+)"', part)
    assert len(spans) == 4 and spans[0] == "left:0.000%;width:100.000%"


def test_a_long_trace_is_bounded_and_links_to_the_window_holding_each_event(client, alice, project):
    client.force_login(alice)
    trace = big_trace(project, 5000, "large")
    html = client.get(trace.get_absolute_url()).content.decode()
    found = rows(html)
    assert len(found) == 100 and 'href="#ev-1"' in found[0]
    assert "Show all 4999 steps" in html and "?steps=all#steps" in html
    assert "4999 events record no timing" not in html and "carries no timing" in html
    # from a later window, the first events are a page away, with the run and policy kept
    run = trace.audit_results.first().run_id
    html = client.get(
        trace.get_absolute_url() + f"?run={run}&policy=twincheck&after_seq=4900"
    ).content.decode()
    assert f'href="?run={run}&amp;policy=twincheck&amp;after_seq=0#ev-1"' in rows(html)[0]


def test_steps_link_to_the_side_by_side_where_it_shows_the_event(client, alice, project):
    client.force_login(alice)
    trace = big_trace(project, 300, "medium")
    html = client.get(trace.get_absolute_url() + "?steps=all").content.decode()
    found = rows(html)
    assert len(found) == 299 and "Show all" not in html
    linked = [int(m) for r in found for m in re.findall(r'href="#sbs-ev-(\d+)"', r)]
    assert linked, "no step links to the side-by-side"
    # every link has its target, and every side-by-side row of an actor event is linked
    targets = [int(m) for m in re.findall(r'id="sbs-ev-(\d+)"', html)]
    assert sorted(linked) == sorted(targets)


def test_the_tree_is_read_once_then_cached(client, alice, project):
    client.force_login(alice)
    trace = big_trace(project, 500, "cached")
    with CaptureQueriesContext(connection) as first:
        assert client.get(trace.get_absolute_url()).status_code == 200
    with CaptureQueriesContext(connection) as second:
        html = client.get(trace.get_absolute_url()).content.decode()
    reads = [q["sql"] for q in first.captured_queries if "string_agg(json_build_array" in q["sql"]]
    assert len(reads) == 1, [q["sql"][:80] for q in first.captured_queries]
    assert len(second.captured_queries) == len(first.captured_queries) - 1
    assert len(rows(html)) == 100


def test_the_orm_read_of_other_databases_gives_what_postgresql_gives(project, monkeypatch):
    """`event_steps` reads PostgreSQL with one aggregate query and other databases (SQLite, for
    development) through the ORM; both give the same rows."""
    from types import SimpleNamespace

    from traces import selectors

    events = timed_trace()
    events[0]["meta"] = {"otel": {"spans": [{"span_id": "a", "kind": "AGENT"}]}}
    events[3]["meta"] = {"span_id": "a"}
    ingest(project, events)
    trace = Trace.objects.get(external_id="timed")
    fast = selectors.event_steps(trace=trace)
    monkeypatch.setattr(selectors, "connection", SimpleNamespace(vendor="other"))
    assert selectors.event_steps(trace=trace) == fast
    assert fast[0]["spans"] == [{"span_id": "a", "kind": "AGENT"}] and fast[1]["spans"] is None
    assert (fast[3]["span_id"], fast[3]["ts"], fast[3]["end_ts"]) == (
        "a",
        "2026-01-31T09:00:01.300000Z",
        "2026-01-31T09:00:03.650000Z",
    )
    assert fast[2]["usage"] == {"input_tokens": 1210, "output_tokens": 64}
    assert (fast[2]["duration_ms"], fast[2]["cost_usd"]) == (1240, 0.0037)
