"""Real Chromium: filter the traces list (rows update, URL changes, back restores) and follow a
transition-matrix cell of a run page to its traces. No console errors, no CSP violations.
Waits use locators: a string predicate would be eval, which the CSP forbids."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browsing import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def listed(project):  # type: ignore[no-untyped-def]
    from tests.lists.conftest import make_trace, make_upload

    up = make_upload(project)
    for i in range(6):
        make_trace(project, up, f"gx-{i}", model="gpt-x", category="cat-a")
    for i in range(4):
        make_trace(project, up, f"cl-{i}", model="claude", category="cat-b")
    return up


def watch(page) -> list[str]:  # type: ignore[no-untyped-def]
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    return errors


def rows(page) -> list[str]:  # type: ignore[no-untyped-def]
    return page.locator("#rows tbody tr td.tid code").all_inner_texts()


def test_filter_list_updates_rows_and_url_and_back_restores(
    page, live_server, alice, project, listed
):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/traces/")
    assert len(rows(page)) == 10
    page.select_option("#f-model", "claude")
    page.wait_for_url(re.compile(r".*model=claude.*"))
    expect(page.locator("#rows tbody tr")).to_have_count(4)
    assert all(r.startswith("cl-") for r in rows(page))
    assert page.locator("#filters").count() == 1  # only the rows were swapped
    page.fill("#f-q", "gx-3")
    page.press("#f-q", "Enter")
    page.wait_for_url(re.compile(r".*q=gx-3.*"))
    expect(page.locator("#rows tbody tr")).to_have_count(0)
    page.go_back()
    page.wait_for_url(re.compile(r".*model=claude(?!.*q=gx).*"))
    expect(page.locator("#rows tbody tr")).to_have_count(4)
    assert errors == [], errors


def test_run_page_matrix_cell_opens_the_filtered_list(page, live_server, alice, project, listed):
    from auditor.models import AuditItem, AuditResult, AuditRun
    from auditor.runs.summary import audit_run_summary
    from traces.models import Trace

    run = AuditRun.objects.create(
        project=project, policies=["checklist"], status="done", traces_total=10, traces_done=10
    )
    for t in Trace.objects.filter(project=project):
        rescued = t.external_id in ("gx-1", "cl-2")
        AuditItem.objects.create(run=run, trace=t, status="done")
        AuditResult.objects.create(
            run=run, trace=t, policy="checklist", applied=rescued, actor_success=not rescued,
            guarded_success=True, transition="rescue" if rescued else "same",
            continuation="exact", record={},
        )  # fmt: skip
    # The summary the run's last chunk writes; the run page draws the matrix from it.
    run.summary = audit_run_summary(run)
    run.save(update_fields=["summary"])
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(f"{live_server.url}{run.get_absolute_url()}")
    page.wait_for_selector("#status[data-status=done]")
    cell = page.locator('table.matrix a[data-actor="failure"][data-guarded="success"]')
    assert cell.inner_text() == "2"
    cell.focus()
    page.keyboard.press("Enter")  # keyboard-usable
    page.wait_for_url(re.compile(r".*/traces/\?.*actor=failure.*guarded=success"))
    assert sorted(rows(page)) == ["cl-2", "gx-1"]
    assert page.locator("#f-actor").input_value() == "failure"
    assert errors == [], errors
