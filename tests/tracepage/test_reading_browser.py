"""Real Chromium reads a trace with the keyboard: events start as one line each, j/k move
between them, o and Enter open and close, a turn folds as a whole, expand/collapse all work,
"jump to divergence" and n reach the side-by-side's differing rows — and at 390 px nothing
scrolls sideways and the side-by-side is stacked with each side labelled."""

from __future__ import annotations

import pytest

from tests.browsing import WIDE, login, shot, watch
from traces.models import Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_events(page) -> int:  # type: ignore[no-untyped-def]
    return page.locator("#timeline li.ev:not(.collapsed)").count()


def test_keyboard_reading_and_narrow_layout(
    page, live_server, alice, audited_with_claims, tmp_path
):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    t = Trace.objects.get(external_id="hostile")
    page.goto(f"{live_server.url}{t.get_absolute_url()}")
    assert open_events(page) == 0
    total = page.locator("#timeline li.ev").count()
    assert total == t.event_count
    # the outline lists the turn with its request
    assert "Turn 0" in page.inner_text("nav.outline")
    assert "Please lock account" in page.inner_text("nav.outline")

    page.keyboard.press("j")  # first event
    assert page.evaluate("document.activeElement.id") == "ev-0"
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.evaluate("document.activeElement.id") == "ev-2"
    page.keyboard.press("k")
    assert page.evaluate("document.activeElement.id") == "ev-1"
    page.keyboard.press("o")
    assert page.locator("#ev-1-body").is_visible() and open_events(page) == 1
    page.keyboard.press("Enter")
    assert page.locator("#ev-1-body").is_hidden()

    page.click("#expand-all")
    assert open_events(page) == total
    page.click("#collapse-all")
    assert open_events(page) == 0

    # a turn folds as a whole
    toggle = page.locator("#timeline .turn-toggle[data-turn='0']")
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "false"
    assert page.locator("#timeline li.ev[data-turn='0']").first.is_hidden()
    toggle.click()
    assert page.locator("#timeline li.ev[data-turn='0']").first.is_visible()

    # jump to the divergence; n walks the differing rows of the side-by-side
    page.click("#jump-divergence")
    assert page.url.endswith("#divergence")
    page.keyboard.press("n")
    assert "sbs-row" in (page.evaluate("document.activeElement.className") or "")
    step = page.evaluate("document.activeElement.dataset.step")
    assert f"divergence at step {step}" in page.inner_text("#divergence")
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 1000})
        wide = page.evaluate(WIDE)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), wide
        shot(page, tmp_path, f"trace-{width}.png")
    # stacked at 390 px: each side says which it is
    assert page.locator("#divergence ~ .sbs-row .side-label").first.is_visible()
    assert errors == [], errors
