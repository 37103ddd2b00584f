"""Real Chromium: the traces list as an annotator sees it — no transitions column, no audit
filters, a line saying why, and content search that does not find the traces of pairs that may
still come to them — while the owner, on the same data, sees the transitions and finds them.

TA_DOCS_SCREENSHOTS=1 writes the annotator's traces list (1440 and 390 px, light and dark) to
docs/screenshots/annotator-traces-{light,dark}-{1440,390}.png."""

from __future__ import annotations

import re

import pytest

from auditor.annotation.services import queue_create
from tests.annotate.conftest import make_run
from tests.browsing import WIDE, login, shot, watch
from traces import search
from traces.models import Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pairs(project, alice):  # type: ignore[no-untyped-def]
    run = make_run(project)
    queue = queue_create(run=run, name="pairs", kinds=["pair"], user=alice)
    search.index_traces(list(Trace.objects.filter(project=project).values_list("pk", flat=True)))
    return queue


def search_for(page, words: str) -> int:  # type: ignore[no-untyped-def]
    with page.expect_response(lambda r: "q=" in r.url):
        page.fill("#f-q", words)
        page.press("#f-q", "Enter")
    page.wait_for_function(
        "document.querySelector('#rows') && location.search.includes('q=')", timeout=10_000
    )
    return int(page.get_attribute("#rows", "data-count") or -1)


def test_annotator_list_names_no_decision_and_search_skips_their_pairs(
    page, live_server, project, alice, bob, pairs, tmp_path
):
    errors = watch(page)
    url = f"{live_server.url}/projects/{project.pk}/traces/"
    login(page, live_server, "alice", "alice-pw")
    page.goto(url)
    assert page.locator("th", has_text="Transitions").count() == 1
    assert page.locator("#rows .tr").count() > 0 and page.locator("#f-transition").count() == 1
    assert search_for(page, "unlock_account") == 3
    page.context.clear_cookies()

    login(page, live_server, "bob", "bob-pw")
    for theme in ("light", "dark"):
        page.goto(url)
        page.select_option("#theme-select", theme)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(url)
            assert page.locator("th", has_text="Transitions").count() == 0
            assert page.locator("#rows .tr, #f-transition, #f-run, #f-actor").count() == 0
            assert page.get_by_text("not shown to annotators").is_visible()
            body = page.locator("#rows").inner_text()
            assert not re.search(r"\b(rescue|harm|same|not_applicable|twincheck)\b", body), body
            fits = page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
            assert fits, page.evaluate(WIDE)
            shot(page, tmp_path, f"annotator-traces-{theme}-{width}.png")
    assert search_for(page, "unlock_account") == 0
    assert errors == [], errors
