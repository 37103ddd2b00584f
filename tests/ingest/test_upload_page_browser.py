"""Real Chromium uploads a file through the page and sees the status reach done."""

from __future__ import annotations

import pytest

from tests.browsing import login
from tests.builders.v1 import jsonl, simple_trace

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_upload_through_page_reaches_done(
    page, live_server, celery_worker_process, project, alice, tmp_path
):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    login(page, live_server, "alice", "alice-pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/upload/")
    path = tmp_path / "agent-run.jsonl"
    path.write_bytes(
        jsonl(simple_trace("p1") + simple_trace("p2")) + b'{"trace_id": "p3", "type": 1}\n'
    )
    page.set_input_files("#file", str(path))
    assert "agent-run.jsonl" in page.inner_text("#chosen")
    page.click("#submit")
    page.wait_for_url("**/uploads/*/")
    # htmx polls the status fragment until the worker is done, then stops polling.
    page.wait_for_selector("#status[data-status=done]", timeout=60_000)
    assert page.inner_text("#traces-accepted") == "2"
    assert page.inner_text("#traces-rejected") == "1"
    assert "expected a non-empty string, found an integer 1" in page.inner_text("table.errors")
    assert page.get_attribute("#status", "hx-trigger") is None
    assert errors == [], errors
    page.screenshot(path=str(tmp_path / "upload-done.png"), full_page=True)
