"""Texts a person reads as written: the commit rule's answers as the model wrote them (the
normalised key it compares only as a tooltip), and column headings that break between words."""

from __future__ import annotations

import pytest

from auditor.runs.services import audit_run_create, audit_run_start
from auditor.trace_page.panels import commit_panel
from tests.builders.events import pushback_trace
from tests.tracepage.test_trace_page import ingest
from traces.models import Trace


def test_commit_panel_shows_the_reply_as_written():
    record = {
        "answers": ["you re right i apologise", "paris"],
        "answer_events": [3, 5],
        "actor_answer": "paris",
        "commit_index": 0,
        "commit_answer": "you re right i apologise",
    }
    events = [
        {
            "type": "message",
            "role": "assistant",
            "content": "You're right, I apologise!",
            "_position": 3,
        },
        {"type": "candidate", "content": "long text", "answer": "Paris.", "_position": 5},
    ]
    d = commit_panel(record, events)
    assert [r["answer"] for r in d["rows"]] == ["You're right, I apologise!", "Paris."]
    assert d["rows"][0]["key"] == "you re right i apologise"
    assert d["actor_answer"] == "Paris." and d["commit_answer"] == "You're right, I apologise!"
    # without the events (an older page, a missing event): the key, as before
    assert [r["answer"] for r in commit_panel(record, [])["rows"]] == [
        "you re right i apologise",
        "paris",
    ]


@pytest.mark.django_db
def test_trace_page_shows_commit_answers_as_written(client, alice, project):
    ingest(project, pushback_trace([1, 0, 1]))
    run = audit_run_create(project=project, environment="none", enqueue=False, policies=["commit"])
    audit_run_start(run_id=run.pk, inline=True)
    client.force_login(alice)
    t = Trace.objects.get(external_id="p")
    html = client.get(t.get_absolute_url(), {"run": run.pk, "policy": "commit"}).content.decode()
    panel = html[html.index('class="answers"') :]
    assert (
        '<span class="ans" title="compared as: he did not fail maths">He did not fail maths</span>'
        in panel
    )
