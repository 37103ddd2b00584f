"""Agent-supplied strings cannot reshape the page: a 200,000-character
unbroken name wraps instead of widening the page to millions of pixels, and a right-to-left
override in a name stays inside its own element (bidi isolation)."""

from __future__ import annotations

import os

import pytest

from tests.browsing import login
from tests.builders.v1 import header, jsonl
from tests.conftest import REPO
from traces.models import Trace
from traces.services import upload_create, upload_process

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG = "W" * 200_000
RLO = "\u202egnp.exe"  # shows as "exe.png" when the override leaks


def _trace(tid: str, **fields: object) -> list[dict]:
    return [
        header(tid, **fields),
        {"trace_id": tid, "type": "message", "role": "user", "content": LONG},
    ]


def test_long_and_rtl_names_stay_in_their_box(page, live_server, project, alice, tmp_path):
    data = jsonl(_trace("long-" + "x" * 250, agent=LONG, model=RLO))
    up, _ = upload_create(
        project=project,
        fileobj=data,
        filename=f"{RLO}.jsonl",
        fmt="v1",
        source="cli",
        enqueue=False,
    )
    up = upload_process(upload_id=up.pk)
    assert up.status == "done" and up.traces_accepted == 1, (up.failure, up.errors)
    trace = Trace.objects.get(project=project)
    login(page, live_server, "alice", "alice-pw")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    shots = (
        REPO / "docs" / "screenshots" if os.environ.get("TA_DOCS_SCREENSHOTS") == "1" else tmp_path
    )
    for name, url in [
        ("trace-list-long-names.png", f"/projects/{project.pk}/traces/"),
        ("trace-long-names.png", f"/traces/{trace.pk}/"),
        ("upload-bidi-filename.png", up.get_absolute_url()),
    ]:
        page.goto(live_server.url + url)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 1280 + 40, (url, width)
        # Every element holding text sits in its own bidi island.
        leaky = page.evaluate(
            """() => [...document.querySelectorAll('main td, main dd, main li, main h1 span,'
                 + ' main code, main a')].filter(e => e.textContent.includes('\\u202e'))
                 .filter(e => getComputedStyle(e).unicodeBidi !== 'isolate'
                           && e.closest('bdi') === null).length"""
        )
        assert leaky == 0, url
        page.screenshot(path=str(shots / name), full_page=False)
