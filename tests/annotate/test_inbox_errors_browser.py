"""Real Chromium: an annotator reaches their next item from the header's "My queues" in one
click, with agreement kept from them; an upload whose 200 traces share one problem shows one
grouped row (not 200) and reads "failed"; owners dismiss it from Needs attention; a viewer
opening the upload form reads why they cannot upload.

TA_DOCS_SCREENSHOTS=1 writes screenshots of these pages (1440 and 390 px, light and dark) to
docs/screenshots."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.annotation.services import queue_create
from tests.annotate.conftest import make_run, member
from tests.browsing import WIDE, login, shot, watch
from tests.builders.v1 import jsonl, simple_trace
from traces.models import Membership, Upload
from traces.services import upload_create, upload_process

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"1440": {"width": 1440, "height": 900}, "390": {"width": 390, "height": 844}}


def all_rejected(project, n: int = 200) -> Upload:  # type: ignore[no-untyped-def]
    events = []
    for i in range(n):
        bad = simple_trace(f"t{i}")
        bad[1] = {**bad[1], "type": "message", "role": "nobody"}
        events += bad
    up, _ = upload_create(
        project=project, fileobj=jsonl(events), filename="rejected.jsonl", source="cli",
        enqueue=False,
    )  # fmt: skip
    return upload_process(upload_id=up.pk)


def each_look(page, tmp_path: Path, url: str, name: str) -> None:  # type: ignore[no-untyped-def]
    """The page at both widths in both themes: no sideways scroll, and a screenshot of each."""
    for theme in ("light", "dark"):
        page.select_option("#theme-select", theme)
        for size, viewport in SIZES.items():
            page.set_viewport_size(viewport)
            page.goto(url)
            assert page.evaluate(WIDE) == [], (name, theme, size)
            shot(page, tmp_path, f"{name}-{theme}-{size}.png")
    page.select_option("#theme-select", "system")
    page.set_viewport_size(SIZES["1440"])


def test_inbox_next_item_in_one_click(
    page, live_server, project, alice, django_user_model, tmp_path
):
    run = make_run(project, locks=2, examples=False)
    queue = queue_create(run=run, name="pairs", kinds=["pair"], k=2, user=alice)
    member(django_user_model, project, "bob", Membership.Role.ANNOTATOR)
    errors = watch(page)
    login(page, live_server, "bob", "bob-pw")
    page.click("header #my-queues")
    page.wait_for_url(f"{live_server.url}/annotate/")
    assert page.locator("tr.inbox-row").count() == 1
    page.click("#inbox-next")  # the one click
    page.wait_for_url(f"{live_server.url}/queues/{queue.pk}/annotate/")
    assert page.locator("input[name=item]").count() >= 1
    assert page.locator("#agreement-hidden").is_visible()
    assert page.locator("#agreement-alpha").count() == 0
    each_look(page, tmp_path, f"{live_server.url}/annotate/", "inbox")
    assert errors == [], errors


def test_grouped_report_and_dismiss(page, live_server, project, alice, django_user_model, tmp_path):
    up = all_rejected(project)
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(live_server.url + up.get_absolute_url())
    assert page.inner_text("#upload-status") == "failed"
    assert page.locator("tr.error-group").count() == 1
    row = page.inner_text("tr.error-group")
    assert "200 lines from 2 to " in row and "and 199 more" in row
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 2500, height  # one row, not a 12,000 px page
    each_look(page, tmp_path, live_server.url + up.get_absolute_url(), "upload-errors")
    each_look(page, tmp_path, f"{live_server.url}/projects/{project.pk}/", "dashboard-attention")
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    assert page.locator("#attention li.attention-upload").count() == 1
    page.click("#attention form.dismiss button")
    page.wait_for_load_state()
    assert page.locator("#attention").count() == 0
    up.refresh_from_db()
    assert up.dismissed

    member(django_user_model, project, "vera", Membership.Role.VIEWER)
    page.context.clear_cookies()
    login(page, live_server, "vera", "vera-pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/upload/")
    assert "You cannot upload to this project" in page.inner_text("#upload-forbidden")
    each_look(
        page, tmp_path, f"{live_server.url}/projects/{project.pk}/upload/", "upload-forbidden"
    )
    assert [e for e in errors if "403" not in e] == [], errors
