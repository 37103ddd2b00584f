"""Real Chromium: a saved view round-trips (save, navigate away, apply: the same filters, columns
and rows); "/" focuses the search unless one is typing; the share link copies; at 390 px the
list is a stack of cards with no sideways scroll and no squeezed cell; tags and comments on the
trace page through htmx. No console errors, no CSP violations.

TA_DOCS_SCREENSHOTS=1 writes the list (column chooser open, tags) and a trace with comments at
1440 and 390 px, light and dark, to docs/screenshots."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from auditor.trace_notes.services import comment_add, tag_add
from tests.annotate.conftest import make_run
from tests.browsing import WIDE, login, shot, watch
from tests.site.test_themes_mobile_browser import NARROW_CELLS
from traces.models import Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def audited(project, alice):  # type: ignore[no-untyped-def]
    """Lock traces and the shipped examples, audited by TwinCheck and the checklist; a few
    traces tagged, one commented."""
    run = make_run(project, locks=3, examples=True, policies=["twincheck", "checklist"])
    traces = list(Trace.objects.filter(project=project).order_by("id"))
    for t, names in zip(traces, (["flaky", "needs-review"], ["flaky"], ["gold"]), strict=False):
        for n in names:
            tag_add(trace=t, name=n, user=alice)
    comment_add(
        trace=traces[0],
        body="The twin's unlock is the same call the agent made.\n<b>not bold</b>",
        user=alice,
    )
    return run, traces


def rows(page) -> list[str]:  # type: ignore[no-untyped-def]
    return page.locator("#rows tbody tr td.tid code").all_inner_texts()


def query(page) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    return parse_qs(urlsplit(page.url).query)


def test_a_saved_view_round_trips(page, live_server, alice, project, audited):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    base = f"{live_server.url}/projects/{project.pk}/traces/"
    page.goto(base)
    everything = rows(page)
    page.select_option("#f-tag", "flaky")
    expect(page).to_have_url(re.compile(r"tag=flaky"))
    page.locator("th.col-events a.sort").click()
    expect(page).to_have_url(re.compile(r"sort=events"))
    # hide the benchmark column, show when each trace was uploaded
    page.click("#columns-menu summary")
    page.uncheck("#columns-form input[value=benchmark]")
    page.check("#columns-form input[value=created]")
    page.click("#columns-form button[type=submit]")
    expect(page.locator("th.col-created")).to_be_visible()
    assert page.locator("th.col-benchmark").count() == 0
    wanted_rows, wanted_query = rows(page), query(page)
    assert 0 < len(wanted_rows) < len(everything)
    assert wanted_query["tag"] == ["flaky"] and wanted_query["sort"] == ["events"]
    assert wanted_query["cols"] == [
        "trace,model,category,outcome,events,duration,tokens,cost,created,tags,transitions"
    ]
    page.click("#views-menu summary")
    page.fill("#view-name", "flaky by length")
    page.click("#view-save button[type=submit]")
    expect(page).to_have_url(re.compile(r"view=\d+"))
    assert "Saved the view" in page.inner_text(".messages")

    # away: the dashboard, then the bare list (the remembered columns, no filters)
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.goto(base)
    assert rows(page) == everything and page.locator("th.col-created").count() == 1
    page.click("#views-menu summary")
    page.click("#views-menu a.view-link:has-text('flaky by length')")
    expect(page).to_have_url(re.compile(r"view=\d+"))
    assert rows(page) == wanted_rows
    got = query(page)
    assert {k: v for k, v in got.items() if k != "view"} == wanted_query
    assert page.input_value("#f-tag") == "flaky"
    assert page.get_attribute("th.col-events", "aria-sort") == "ascending"
    assert page.locator("th.col-benchmark").count() == 0
    assert "view “flaky by length”" in page.inner_text("#rows .summary")
    # the view's stable link (?view=<id> alone) opens the same state
    page.goto(f"{base}?view={got['view'][0]}")
    assert rows(page) == wanted_rows and page.input_value("#f-tag") == "flaky"
    assert errors == [], errors


def test_slash_focuses_search_and_copy_link_copies(page, live_server, alice, project, audited):
    errors = watch(page)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    login(page, live_server, "alice", "alice-pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/traces/?tag=gold")
    page.locator("h1").click()
    page.keyboard.press("/")
    expect(page.locator("#f-q")).to_be_focused()
    assert page.input_value("#f-q") == ""
    # typing "/" into another box types it
    page.click("#f-tid")
    page.keyboard.type("run/")
    expect(page.locator("#f-tid")).to_be_focused()
    assert page.input_value("#f-tid") == "run/"
    page.fill("#f-tid", "")
    page.locator("h1").click()
    page.click("#list-tools button.copy-link")
    expect(page.locator("#list-tools .copied")).to_have_text("Copied.")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == page.input_value("#share-url")
    assert copied.startswith(live_server.url) and "tag=gold" in copied
    # the link opens the same list for a member
    page.goto(copied)
    assert page.input_value("#f-tag") == "gold" and len(rows(page)) == 1
    assert errors == [], errors


def test_list_is_cards_at_390_px(page, live_server, alice, project, audited):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(
        f"{live_server.url}/projects/{project.pk}/traces/?cols=trace,model,created,tags,transitions"
    )
    first = page.locator("#rows tbody tr").first
    assert first.evaluate("e => getComputedStyle(e).display") == "block"
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth"), (
        page.evaluate(WIDE)
    )
    assert page.evaluate(NARROW_CELLS) == []
    # each value says its column; the card is no wider than the screen
    tags = page.locator("#rows tbody tr td.tags").filter(has_text="flaky").first
    label = tags.evaluate("e => getComputedStyle(e, '::before').content")
    assert "data-label" in label or "Tags" in label, label
    box = first.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    # the open tools fit too
    page.click("#columns-menu summary")
    page.click("#views-menu summary")
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth"), (
        page.evaluate(WIDE)
    )
    # the cards make the list short: 50 rows would otherwise be thousands of pixels a page
    height = page.evaluate("document.querySelector('#rows table').getBoundingClientRect().height")
    assert height < 260 * page.locator("#rows tbody tr").count()
    assert errors == [], errors


def test_tags_and_comments_on_the_trace_page(page, live_server, alice, project, audited):
    errors = watch(page)
    _run, traces = audited
    login(page, live_server, "alice", "alice-pw")
    page.goto(live_server.url + traces[1].get_absolute_url())
    page.fill("#tag-name", "Regression")
    page.click("#tag-add button")
    expect(page.locator("#trace-tags")).to_contain_text("Regression")
    page.fill("#tag-name", "regression")
    page.click("#tag-add button")
    expect(page.locator("#note-error")).to_contain_text("already tagged")
    page.fill("#tag-name", "two words")
    page.click("#tag-add button")
    expect(page.locator("#note-error")).to_contain_text("one word")
    page.fill("#comment-body", "<script>alert(1)</script> first line\nsecond line")
    page.click("#comment-add button")
    expect(page.locator("#trace-comments")).to_contain_text("<script>alert(1)</script> first line")
    assert page.locator("#trace-comments script").count() == 0
    page.locator("#trace-comments button.comment-delete").last.click()
    expect(page.locator("#trace-comments")).not_to_contain_text("first line")
    page.locator("#trace-tags button.tag-remove").last.click()
    expect(page.locator("#trace-tags")).not_to_contain_text("Regression")
    # the tag links to the list filtered by it
    page.locator("#trace-tags a.tag", has_text="flaky").click()
    expect(page).to_have_url(re.compile(r"/traces/\?tag=flaky$"))
    assert page.input_value("#f-tag") == "flaky"
    # the two refusals answered 400 on purpose (Chromium logs each); nothing else went wrong
    refused = [e for e in errors if "status of 400" in e]
    assert len(refused) == 2 and [e for e in errors if e not in refused] == [], errors


def test_screenshots_of_views_and_notes(page, live_server, alice, project, audited, tmp_path):
    errors = watch(page)
    _run, traces = audited
    login(page, live_server, "alice", "alice-pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/traces/")
    page.click("#views-menu summary")
    page.fill("#view-name", "flaky traces")
    page.check("#view-shared")
    page.click("#view-save button[type=submit]")
    for theme in ("light", "dark"):
        page.select_option("#theme-select", theme)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(
                f"{live_server.url}/projects/{project.pk}/traces/?cols=trace,model,category,outcome,events,created,tags,transitions"
            )
            page.click("#columns-menu summary")
            assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
            shot(page, tmp_path, f"traces-views-{theme}-{width}.png")
            page.goto(live_server.url + traces[0].get_absolute_url())
            page.locator("#notes").scroll_into_view_if_needed()
            assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
            shot(page, tmp_path, f"trace-notes-{theme}-{width}.png")
    assert errors == [], errors
