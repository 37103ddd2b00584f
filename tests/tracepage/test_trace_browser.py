"""Real Chromium on the trace page: unfold a folded event, see the divergence, switch policy with
htmx (URL kept, back button works) and find plotly charts drawn — with no console errors and no
CSP violations."""

from __future__ import annotations

import pytest

from tests.browsing import login, watch
from traces.models import Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_unfold_event_and_see_the_divergence(
    page, live_server, project, alice, audited_with_claims, tmp_path
):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    t = Trace.objects.get(external_id="hostile")
    page.goto(f"{live_server.url}{t.get_absolute_url()}")
    # The side-by-side opens on TwinCheck's divergence; the prefix is collapsed.
    assert page.locator("#divergence").is_visible()
    assert "identical steps" in page.inner_text(".sbs-prefix > summary")
    assert "twin" not in page.inner_text(".sbs-row.first-diff .sbs-cell >> nth=0")
    assert "guard: twincheck" in page.inner_text(".sbs-row.first-diff")
    assert page.locator(".sbs-prefix .sbs-row").first.is_hidden()
    page.click(".sbs-prefix > summary")
    assert page.locator(".sbs-prefix .sbs-row").first.is_visible()
    # Events are one line each until opened; open #5 from its toggle.
    assert page.locator("#ev-5-body").is_hidden()
    page.click("#ev-5 .ev-toggle")
    # A folded event: the link loads its full body in place (htmx), focus follows.
    body = page.locator("#ev-5-body")
    assert "Show all" in body.inner_text()
    body.locator("a.unfold").focus()
    page.keyboard.press("Enter")
    # (Locator waits, not wait_for_function: a string predicate is eval, which the CSP forbids.)
    body.locator("a.unfold").wait_for(state="detached")
    assert "y" * 200 in body.inner_text()
    assert page.url.endswith(t.get_absolute_url())  # fragment loads do not navigate
    # Hostile content is text, never markup.
    assert "<script>alert('x')</script>" in page.inner_text("#ev-1")
    assert "␛[31mFAILED␛[0m" in page.inner_text("#ev-3")
    assert errors == [], errors
    page.screenshot(path=str(tmp_path / "trace-divergence.png"), full_page=True)


def test_policy_tabs_draw_plotly_charts_and_keep_url_state(
    page, live_server, project, alice, audited_with_claims
):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    t = Trace.objects.get(external_id="claims")
    page.goto(f"{live_server.url}{t.get_absolute_url()}")
    chart = page.locator("#chart-checklist.js-plotly-plot")
    chart.wait_for(timeout=15_000)
    assert chart.locator("svg.main-svg").count() > 0
    assert "mistaken feedback" in chart.inner_text()
    # Switch policy via htmx: the audit section is swapped, the URL pushed, charts redrawn.
    page.click("a.policy-tab:text-is('commit')")
    page.wait_for_url("**policy=commit**")
    assert "Actor vs guarded · commit" in page.inner_text("#sbs")
    page.locator("#chart-checklist.js-plotly-plot svg.main-svg").first.wait_for()
    page.click("a.policy-tab:text-is('checklist')")
    page.wait_for_url("**policy=checklist**")
    assert "Actor vs guarded · checklist" in page.inner_text("#sbs")
    page.go_back()
    page.wait_for_url("**policy=commit**")
    page.locator("#sbs-h", has_text="· commit").wait_for()
    page.locator("#chart-checklist.js-plotly-plot svg.main-svg").first.wait_for()
    assert errors == [], errors
