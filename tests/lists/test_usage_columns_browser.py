"""Real Chromium: the traces list's duration, tokens and cost columns on real τ²-bench traces
(timed and costed) beside τ-bench ones (which record neither): sorting by cost from its header,
the min-duration and cost-known filters, readable in light and dark mode at 1440 px with no
console errors. TA_DOCS_SCREENSHOTS=1 writes the screenshots to docs/screenshots."""

from __future__ import annotations

import io
import re

import orjson
import pytest
from playwright.sync_api import expect

from tests.browsing import WIDE, login, shot, watch
from tests.real_data import data_root
from traces.models import Trace
from traces.services import upload_create, upload_process

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _ingest(project, data: bytes, name: str) -> None:  # type: ignore[no-untyped-def]
    upload, _ = upload_create(
        project=project, fileobj=io.BytesIO(data), filename=name, source="cli", enqueue=False
    )
    assert upload_process(upload_id=upload.pk).status == "done"


@pytest.fixture
def listed(project):  # type: ignore[no-untyped-def]
    root = data_root()
    tau = orjson.loads((root / "tau-bench" / "gpt-4o-airline.json").read_bytes())[:4]
    _ingest(project, orjson.dumps(tau), "gpt-4o-airline.json")
    for name in ("airline_grok-3.json", "telecom_grok-3.json"):
        _ingest(project, (root / "tau2-bench" / name).read_bytes(), name)
    return project


def test_columns_sort_and_filter_in_both_themes(page, live_server, alice, listed, tmp_path):
    errors = watch(page)
    page.set_viewport_size({"width": 1440, "height": 900})
    login(page, live_server, "alice", "alice-pw")
    page.goto(f"{live_server.url}/projects/{listed.pk}/traces/")
    costed = Trace.objects.filter(project=listed, cost_usd__isnull=False).count()
    total = Trace.objects.filter(project=listed).count()
    assert 0 < costed < total
    page.click("#rows th a.sort:text('Cost')")
    expect(page).to_have_url(re.compile(r"sort=cost"))
    page.click("#rows th a.sort:text('Cost')")  # again: dearest first
    expect(page).to_have_url(re.compile(r"sort=-cost"))
    texts = [t for t in page.locator("#rows tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td.usage')].map(c => c.textContent.trim()))"
    )]  # fmt: skip
    assert len(texts) == total
    assert all(t[2].startswith("$") for t in texts[:costed])
    assert all(t == ["—", "—", "—"] for t in texts[costed:])  # no figures: last, and dashes
    values = [float(t[2][1:]) for t in texts[:costed]]
    assert values == sorted(values, reverse=True)
    for theme in ("light", "dark"):
        page.select_option("#theme-select", theme)
        assert page.evaluate(WIDE) == []
        shot(page, tmp_path, f"traces-usage-columns-{theme}-1440.png")
    page.select_option("#theme-select", "light")
    page.fill("#f-dur_min", "60")
    page.press("#f-dur_min", "Enter")
    expect(page).to_have_url(re.compile(r"dur_min=60"))
    slow = Trace.objects.filter(project=listed, duration_ms__gte=60_000).count()
    expect(page.locator("#rows tbody tr")).to_have_count(slow)
    page.goto(f"{live_server.url}/projects/{listed.pk}/traces/?has_cost=no")
    expect(page.locator("#rows tbody tr")).to_have_count(total - costed)
    page.select_option("#theme-select", "dark")
    shot(page, tmp_path, "traces-usage-filter-dark-1440.png")
    assert errors == [], errors
