"""Hostile trace content is stored intact and shown inert: no injected script runs."""

from __future__ import annotations

import pytest

from tests.browsing import login
from tests.builders.v1 import header, jsonl
from traces.models import Event, Trace
from traces.services import upload_create, upload_process

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAYLOADS = [
    "<script>window.__pwned = 'script'</script>",
    "<img src=x onerror=\"window.__pwned = 'onerror'\">",
    '<a href="javascript:window.__pwned=\'href\'" id="evil-link">click me</a>',
    "<svg onload=\"window.__pwned = 'svg'\"></svg>",
    "<iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>",
    "\x1b[31mred ANSI\x1b[0m and \x1b]0;title\x07",
    "</pre></details><script>window.__pwned = 'breakout'</script>",
]


def hostile_events(tid: str) -> list[dict]:
    events = [
        header(
            tid,
            agent="<b onmouseover=\"window.__pwned='agent'\">bot</b>",
            model="<script>window.__pwned='model'</script>",
        )
    ]
    for i, text in enumerate(PAYLOADS):
        events.append({"trace_id": tid, "type": "message", "role": "user", "content": text})
        events.append(
            {
                "trace_id": tid,
                "type": "tool_call",
                "call_id": f"c{i}",
                "name": f"<script>x{i}</script>",
                "arguments": {"q": text},
            }
        )
    events.append(
        {
            "trace_id": tid,
            "type": "tool_result",
            "call_id": "c0",
            "status": "ok",
            "content": "A" * (10 * 1024 * 1024),
        }
    )  # a 10 MB string
    deep: dict = {"leaf": "<script>window.__pwned='deep'</script>"}
    for _ in range(60):
        deep = {"d": deep}
    events.append(
        {
            "trace_id": tid,
            "type": "x-custom",
            "meta": deep,
            "<script>key</script>": "unknown field with a hostile name",
        }
    )
    return events


def test_hostile_trace_is_stored_intact_and_runs_no_script(page, live_server, project, alice):
    events = hostile_events("<script>alert('id')</script>")
    data = (
        jsonl(events)
        + b'{"trace_id": "utf8", "type": "message", "role": "user", "content": "caf\xe9 \xff"}\n'
    )
    up, _ = upload_create(
        project=project, fileobj=data, filename="hostile.jsonl", source="cli", enqueue=False
    )
    up = upload_process(upload_id=up.pk)
    assert up.status == "done" and up.traces_accepted == 2, up.errors
    trace = Trace.objects.get(external_id="<script>alert('id')</script>")
    stored = [e.payload for e in Event.objects.filter(trace=trace).order_by("seq")]
    assert stored == events  # intact, 10 MB string and hostile keys included

    dialogs: list[str] = []
    violations: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on(
        "console",
        lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    login(page, live_server, "alice", "alice-pw")
    for url in (
        trace.get_absolute_url(),
        f"/projects/{project.pk}/traces/",
        up.get_absolute_url(),
        f"/projects/{project.pk}/",
    ):
        response = page.goto(f"{live_server.url}{url}")
        assert response.status < 400, url
        assert "script-src 'self'" in response.headers["content-security-policy"]
        page.wait_for_timeout(300)
        assert page.evaluate("window.__pwned") is None, url
    # The hostile text is on the page as text, not as markup.
    page.goto(f"{live_server.url}{trace.get_absolute_url()}")
    assert page.locator("#evil-link").count() == 0
    # No inline script at all (json_script's data blocks are not executed).
    assert page.locator('script:not([src]):not([type="application/json"])').count() == 0
    assert dialogs == []
    utf8 = Trace.objects.get(external_id="utf8")
    assert Event.objects.get(trace=utf8).payload["content"] == "caf\ufffd \ufffd"
