"""Real Chromium: the run page's time, tokens and cost section per model on real τ²-bench
traces beside v1 traces that record little, readable in light and dark mode and fitting a 390 px
phone. TA_DOCS_SCREENSHOTS=1 writes its 1440 px screenshots to docs/screenshots."""

from __future__ import annotations

import os

import pytest

from tests.browsing import DOCS, WIDE, login, watch
from tests.runpage.test_trace_usage import run  # noqa: F401 — the fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_usage_section_in_both_themes(page, live_server, alice, run, tmp_path):  # noqa: F811
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(live_server.url + run.get_absolute_url())
    section = page.locator("#trace-usage")
    assert section.locator("tbody tr").count() == 2
    assert "(3 without)" in section.locator('tr[data-model="m-1"]').inner_text()
    target = DOCS if os.environ.get("TA_DOCS_SCREENSHOTS") == "1" else tmp_path
    for theme in ("light", "dark"):
        page.select_option("#theme-select", theme)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            assert page.evaluate(WIDE) == []
            where = target if width == 1440 else tmp_path  # the docs show the wide page
            section.screenshot(path=str(where / f"run-trace-usage-{theme}-{width}.png"))
    assert errors == [], errors
