"""The trace page (`auditor:trace`) and its htmx fragments, and the pure alignment / panel code
behind it (`auditor.trace_page`)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from auditor.models import AuditResult, AuditRun
from auditor.runs.services import audit_run_create, audit_run_start
from auditor.trace_page.alignment import CONTINUATIONS, align, side_by_side
from auditor.trace_page.events import PREVIEW_CHARS, event_view
from auditor.trace_page.panels import checklist_panel, commit_panel, twincheck_panel, vrr_panel
from auditor.trace_page.text import visible
from tests.builders.events import pushback_trace
from tests.tracepage.conftest import ANSI, SCRIPT, hostile_trace, ingest
from traces.models import Event, Trace, Upload

HX = {"HTTP_HX_REQUEST": "true"}


# --- pure functions ----------------------------------------------------------------------


def test_visible_shows_escape_and_control_characters():
    assert visible(ANSI) == "␛[31mFAILED␛[0m"
    assert visible("a\tb\nc\r\n\x00\x7f") == "a\tb\nc\n␀␡"


def test_event_view_shows_unknown_types_and_fields():
    v = event_view({"type": "guardrail", "rule": "no_write", "trace_id": "t"}, 3)
    assert not v.known and v.type == "guardrail"
    assert ("rule", "no_write", False) in v.blocks[0].rows
    v = event_view(
        {"type": "tool_call", "name": "ls", "arguments": {"path": "/"}, "latency_ms": 9}, 1
    )
    assert v.known
    labels = [b.label for b in v.blocks]
    assert labels == ["arguments", "other fields"]
    assert ("path", "/", False) in v.blocks[0].rows


def test_event_view_folds_long_content_with_a_preview():
    v = event_view({"type": "tool_result", "status": "ok", "content": "x" * 5000}, 1)
    assert v.folded and v.blocks == [] and len(v.preview) == PREVIEW_CHARS
    assert not event_view({"type": "tool_result", "content": "x" * 5000}, 1, fold=False).folded


def test_tool_result_json_in_a_string_is_pretty_printed():
    v = event_view({"type": "tool_result", "status": "ok", "content": '{"a": [1, 2]}'}, 1)
    assert v.blocks[0].kind == "json" and '"a": [' in v.blocks[0].text


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "arguments": args}


def test_align_collapses_prefix_and_pairs_the_replacement():
    actor = [{"type": "trace", "seq": 0}, call("a"), call("b"), call("c"), call("d")]
    # The replay copies the prefix (seq kept), replaces b, and marks its own events in meta.
    guarded = [dict(actor[0]), call("a"), {**call("twin"), "meta": {"guarded": True}}, call("c")]
    al = align(actor, guarded)
    assert al.prefix == 2 and al.divergence == 2
    assert [s.kind for s in al.steps] == ["same", "same", "changed", "same", "actor"]
    assert al.counts == {"same": 3, "changed": 1, "actor": 1, "guarded": 0}


def test_align_ignores_bookkeeping_fields():
    a = [{**call("a"), "seq": 1, "ts": "x", "meta": {"k": 1}}]
    g = [{**call("a"), "meta": {"executed": True}}]
    assert align(a, g).identical


def test_side_by_side_collapses_a_trailing_run_of_dropped_actor_steps():
    actor = [call(f"s{i}") for i in range(10)]
    guarded = actor[:3] + [call("twin")]
    sbs = side_by_side(actor, guarded)
    assert sbs.prefix == 3 and len(sbs.prefix_rows) == 3
    assert [r.kind for r in sbs.rows] == ["changed"]
    assert len(sbs.tail_rows) == 6 and sbs.more == 0
    assert sbs.rows[0].guarded is not None and "twin" in sbs.rows[0].guarded.summary


def test_side_by_side_windows_a_long_prefix():
    actor = [call(f"s{i}") for i in range(1000)]
    sbs = side_by_side(actor, actor[:900] + [call("x")], prefix_window=50, limit=10)
    assert sbs.prefix == 900 and sbs.hidden_prefix == 850 and len(sbs.prefix_rows) == 50
    assert len(sbs.rows) + len(sbs.tail_rows) <= 10 and sbs.more > 0


@pytest.mark.parametrize("panel", [twincheck_panel, checklist_panel, commit_panel])
def test_panels_degrade_on_an_empty_or_odd_record(panel):
    assert panel({})["missing"]
    panel({"decisions": [None, 3], "timeline": "x", "feedback_events": [1], "answers": "?"})


def test_vrr_panel_reads_votes_from_events_and_marks_rounds():
    record = {
        "mode": "stop",
        "n_rounds": 2,
        "beliefs": [0.9, 0.95],
        "priors": [0.5, 0.8],
        "gains": [0.1, -0.1],
        "true_validity": [None, True],
        "actor_round": 1,
        "stop_round": 1,
        "guard_round": 0,
    }
    events = [
        {"type": "candidate", "candidate_id": "c0", "round": 0},
        {"type": "verification", "candidate_id": "c0", "accepts": 2, "votes": 5},
        {"type": "verification", "round": 1, "accepts": 4, "votes": 5},
    ]
    p = vrr_panel(record, events)
    assert [r["votes"] for r in p["rows"]] == ["2/5", "4/5"]
    assert p["rows"][1]["stop"] and p["rows"][0]["guard"]
    names = [t["name"] for t in p["figure"]["data"]]
    assert "belief after the votes" in names and "true validity" in names
    assert "expected gain of one more repair" in names
    assert not p["missing"]
    assert vrr_panel({})["figure"] is None


def test_checklist_panel_marks_feedback_validity_revisions_and_flags():
    record = {
        "feedback_events": [{"index": 4, "valid": False, "action": "keep", "targeted": ["c1"]}],
        "flags": [{"flag": "complaint_laundering", "record": 9, "claim": "c1"}],
        "timeline": {
            "claims": {
                "c1": [
                    {"record": 3, "confidence": 0.9},
                    {"record": 9, "confidence": 0.5, "revised": True},
                ]
            }
        },
        "settings": {"theta": 0.5},
    }
    p = checklist_panel(record, [{"type": "claims", "claims": [{"id": "c1", "text": "T"}]}])
    assert p["claims"][0]["text"] == "T" and p["claims"][0]["revisions"] == 1
    assert p["claims"][0]["flags"] == ["complaint laundering"]
    fig = p["figure"]
    # a revision starts a new line (never one line across a change of meaning)
    assert [t["marker"]["symbol"] for t in fig["data"]] == [["circle"], ["diamond"]]
    texts = [a["text"] for a in fig["layout"]["annotations"]]
    assert "mistaken feedback" in texts and "⚑ complaint laundering" in texts


# --- views -------------------------------------------------------------------------------


@pytest.fixture
def audited(db, project):  # type: ignore[no-untyped-def]
    ingest(project, hostile_trace() + pushback_trace([1, 1, 0], confidence=0.9))
    run = audit_run_create(project=project, environment="none", enqueue=False)
    audit_run_start(run_id=run.pk, inline=True)
    run.refresh_from_db()
    assert run.status == "done"
    return run


def trace_of(external_id: str) -> Trace:
    return Trace.objects.get(external_id=external_id)


@pytest.mark.django_db
def test_trace_page_shows_timeline_side_by_side_and_panels(client, alice, audited):
    client.force_login(alice)
    t = trace_of("hostile")
    r = client.get(t.get_absolute_url())
    assert r.status_code == 200
    html = r.content.decode()
    # Timeline: pretty tool calls, result status, unknown type and its fields.
    assert "lock_account" in html and "unknown type" in html and "guardrail" in html
    assert 'id="ev-5"' in html and "Show all (" in html  # the 4,000-character result is folded
    # Side by side for TwinCheck: prefix collapsed, divergence, continuation explained.
    assert "identical steps" in html and 'id="divergence"' in html
    assert "truncated" in html and CONTINUATIONS["truncated"] in html
    assert "heuristic judge" in html and "both orders prefer the twin" in html
    # Hostile content is inert text.
    assert SCRIPT not in html and "&lt;script&gt;alert(" in html
    i = html.find("\x1b")
    assert i < 0, html[i - 300 : i + 50]
    assert "␛[31mFAILED␛[0m" in html
    assert "plotly-strict-4.1.1.min.js" in html and "js/trace.js" in html


@pytest.mark.django_db
def test_url_state_selects_run_and_policy(client, alice, audited):
    client.force_login(alice)
    t = trace_of("p")
    r = client.get(t.get_absolute_url(), {"run": audited.pk, "policy": "checklist"})
    html = r.content.decode()
    assert r.status_code == 200 and "Actor vs guarded · checklist" in html
    assert 'id="chart-checklist-data"' in html or "No claims records" in html
    r = client.get(t.get_absolute_url(), {"run": audited.pk, "policy": "commit"})
    assert "Actor vs guarded · commit" in r.content.decode()
    # An unknown run or policy falls back to the defaults instead of failing.
    assert client.get(t.get_absolute_url(), {"run": "x", "policy": "nope"}).status_code == 200


@pytest.mark.django_db
def test_policy_tab_fragment_is_the_audit_section_only(client, alice, audited):
    client.force_login(alice)
    t = trace_of("p")
    r = client.get(t.get_absolute_url(), {"run": audited.pk, "policy": "vrr"}, **HX)
    html = r.content.decode()
    assert r.status_code == 200 and html.lstrip().startswith('<section id="audit"')
    assert "Actor vs guarded · vrr" in html and "<html" not in html and 'id="timeline"' not in html


@pytest.mark.django_db
def test_folded_event_fragment_and_page(client, alice, audited):
    client.force_login(alice)
    t = trace_of("hostile")
    url = reverse("auditor:trace-event", args=[t.pk, 5])
    r = client.get(url, **HX)
    assert r.status_code == 200 and "y" * 4000 in r.content.decode()
    assert "<html" not in r.content.decode()
    r = client.get(url)  # without JavaScript: a page of its own
    assert (
        r.status_code == 200
        and "<html" in r.content.decode()
        and "Stored JSON" in r.content.decode()
    )
    r = client.get(reverse("auditor:trace-event", args=[t.pk, 1]), **HX)
    assert SCRIPT not in r.content.decode() and "&lt;script&gt;" in r.content.decode()
    r = client.get(reverse("auditor:trace-event", args=[t.pk, 3]), **HX)
    assert "␛[31m" in r.content.decode() and "\x1b" not in r.content.decode()
    assert client.get(reverse("auditor:trace-event", args=[t.pk, 999])).status_code == 404


@pytest.mark.django_db
def test_outsider_gets_404_everywhere(client, charlie, audited):
    client.force_login(charlie)
    t = trace_of("hostile")
    for url in (
        t.get_absolute_url(),
        reverse("auditor:trace-events", args=[t.pk]) + "?after_seq=0",
        reverse("auditor:trace-event", args=[t.pk, 0]),
    ):
        assert client.get(url).status_code == 404
        assert client.get(url, **HX).status_code == 404


@pytest.mark.django_db
def test_anonymous_is_sent_to_login(client, audited):
    r = client.get(trace_of("hostile").get_absolute_url())
    assert r.status_code == 302 and "/login/" in r["Location"]


def big_trace(project, n: int, name: str, *, guarded: bool = True) -> Trace:
    """A trace of ``n`` events written straight to the tables (ingest is tested elsewhere), with
    a run whose TwinCheck result replaces the middle call."""
    upload = Upload.objects.create(
        project=project,
        file=f"uploads/{name}.jsonl",
        filename=f"{name}.jsonl",
        size=1,
        content_hash=name,
        source=Upload.Source.CLI,
        status=Upload.Status.DONE,
    )
    trace = Trace.objects.create(project=project, upload=upload, external_id=name, event_count=n)
    payloads = [{"trace_id": name, "type": "trace", "seq": 0}]
    for i in range(1, n):
        if i % 2:
            payloads.append(
                {
                    "trace_id": name,
                    "type": "tool_call",
                    "seq": i,
                    "name": "get",
                    "arguments": {"i": i},
                }
            )
        else:
            payloads.append(
                {
                    "trace_id": name,
                    "type": "tool_result",
                    "seq": i,
                    "status": "ok",
                    "content": f"r{i}",
                }
            )
    Event.objects.bulk_create(
        [
            Event(trace=trace, seq=p["seq"], type=p["type"], line=p["seq"] + 1, payload=p)
            for p in payloads
        ],
        batch_size=2000,
    )
    run = AuditRun.objects.create(project=project, policies=["twincheck", "checklist"])
    mid = n // 2 | 1
    AuditResult.objects.create(
        run=run,
        trace=trace,
        policy="twincheck",
        applied=True,
        transition="unknown",
        continuation="truncated",
        record={"decisions": []},
        guarded_trajectory=payloads[:mid] + [{"type": "tool_call", "name": "twin", "arguments": {}}]
        if guarded
        else None,
    )
    AuditResult.objects.create(
        run=run,
        trace=trace,
        policy="checklist",
        applied=False,
        transition="same",
        continuation="exact",
        record={},
    )
    return trace


@pytest.mark.django_db
def test_query_count_does_not_grow_with_trace_length(client, alice, project):
    client.force_login(alice)
    small, large = big_trace(project, 10, "small"), big_trace(project, 5000, "large")
    counts = {}
    for t in (small, large):
        client.get(t.get_absolute_url())  # warm caches (session, content types)
        with CaptureQueriesContext(connection) as q:
            r = client.get(t.get_absolute_url())
        assert r.status_code == 200
        counts[t.external_id] = len(q.captured_queries)
    # the notes (tags, comments) add two fixed queries to the page's
    assert counts["large"] == counts["small"] <= 11, counts
    html = r.content.decode()
    assert html.count('class="ev ') == 200  # one window of the timeline, then "load more"
    assert "after_seq=199" in html and "Load more events" in html
    assert "2501 identical steps" in html  # the prefix is collapsed, the tail windowed
    # The next window is keyset paginated and costs as few queries.
    url = reverse("auditor:trace-events", args=[large.pk]) + "?after_seq=199"
    with CaptureQueriesContext(connection) as q:
        r = client.get(url, **HX)
    assert len(q.captured_queries) <= 5
    html = r.content.decode()
    assert 'id="ev-200"' in html and 'id="ev-199"' not in html and "after_seq=399" in html
    # Without JavaScript the "load more" link is the page itself, from that point.
    r = client.get(url)
    assert r.status_code == 302 and "after_seq=199" in r["Location"]
    r = client.get(large.get_absolute_url() + "?after_seq=4900")
    html = r.content.decode()
    assert 'id="ev-4900"' not in html and 'id="ev-4999"' in html and "Load more" not in html


def test_the_checklist_threshold_line_is_the_records_theta_even_zero():
    """θ comes from the record's settings; θ = 0 is drawn at 0 (not replaced by a default), and
    a record that does not say its θ gets no line rather than a guessed one."""
    record = {
        "timeline": {"claims": {"c1": [{"record": 1, "confidence": 0.4}]}},
        "feedback_events": [],
        "settings": {"theta": 0.0},
    }
    shapes = checklist_panel(record)["figure"]["layout"]["shapes"]
    assert [(s["y0"], s["y1"]) for s in shapes if s.get("xref") == "paper"] == [(0.0, 0.0)]
    del record["settings"]
    shapes = checklist_panel(record)["figure"]["layout"]["shapes"]
    assert [s for s in shapes if s.get("xref") == "paper"] == []


def test_every_policy_has_a_panel_and_an_unknown_policy_a_plain_one():
    from auditor.trace_page import panels
    from policies import POLICIES

    for policy in POLICIES:
        panel = panels.panel_for(policy)
        assert panel.title != policy and panel.template.endswith(f"_{policy}.html")
    unknown = panels.panel_for("newer-policy")
    assert unknown.template == "" and unknown.build({}, []) == {"missing": []}
