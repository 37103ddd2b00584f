"""Real Chromium: the run page's forest plot of Δ per model and category draws on three real
SYCON-Bench runs, on a transparent background with the theme's colours, in light and dark mode
(and again when the theme changes), with the page fitting a 390 px phone.

TA_DOCS_SCREENSHOTS=1 writes the screenshots of the per-model section, the tasks × models
matrix and the paired comparison (1440 and 390 px, light and dark) to docs/screenshots."""

from __future__ import annotations

import os

import pytest

from auditor.runs.services import audit_run_create, audit_run_start
from tests.audit.sycon_runs import MODELS, SETTINGS, needs_sycon, sycon_run
from tests.browsing import DOCS, WIDE, login, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), needs_sycon]

FOREST = "#policy-commit .plot.forest"

# The drawn forest plot's colours: its background, an axis label, the page's text, the dotted
# intervals' stroke and the theme's --muted.
COLOURS = """(sel) => {
  const c = document.querySelector(sel);
  const muted = getComputedStyle(document.body).getPropertyValue('--muted').trim();
  const line = c.querySelector('.scatterlayer .js-line');
  const probe = document.createElement('span');
  probe.style.color = muted; document.body.appendChild(probe);
  const mutedRgb = getComputedStyle(probe).color; probe.remove();
  return {paper: getComputedStyle(c.querySelector('.main-svg')).backgroundColor,
          tick: c.querySelector('.ytick text').style.fill,
          body: getComputedStyle(document.body).color,
          line: line ? line.style.stroke : null, muted: mutedRgb,
          rows: c.querySelectorAll('.ytick').length,
          points: c.querySelectorAll('.scatterlayer .point').length};
}"""


# The row names' words broken across lines: a text node (a name's part between two <wbr>)
# drawn on more than one line.
BROKEN = """(sel) => [...document.querySelectorAll(sel + ' th[scope=row] a')].flatMap(a =>
  [...a.childNodes].filter(n => n.nodeType === 3 && n.textContent.trim()).filter(n => {
    const r = document.createRange(); r.selectNodeContents(n);
    return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1;
  }).map(n => n.textContent))"""


@pytest.fixture
def run(project):  # type: ignore[no-untyped-def]
    return sycon_run(project)


def test_forest_plot_draws_in_both_themes(page, live_server, alice, run, tmp_path):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(live_server.url + run.get_absolute_url())
    for model in MODELS:
        assert page.locator(f'#policy-commit tbody.model[data-model="{model}"]').count() == 1
    assert page.locator("#policy-commit table.model-diffs tbody tr").count() == 3
    seen = {}
    for theme in ("light", "dark"):
        page.select_option("#theme-select", theme)
        page.locator(f"{FOREST} svg.main-svg").first.wait_for(timeout=20_000)
        page.wait_for_function(
            "(sel) => document.querySelector(sel).style.fill === "
            "getComputedStyle(document.body).color",
            arg=f"{FOREST} .ytick text",
        )
        c = page.evaluate(COLOURS, FOREST)
        assert "0)" in c["paper"] or c["paper"] == "transparent", c
        assert c["tick"] == c["body"], c
        # three models and their category: six rows; gpt-4o's known pairs give it points, the
        # others' intervals are drawn alone (no pair known), in the theme's muted colour
        assert c["rows"] == 6 and c["points"] >= 1, c
        assert c["line"] == c["muted"], c
        seen[theme] = c
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            if width == 390:  # plotly redraws the chart to its box's new width
                page.wait_for_function(
                    "(sel) => document.querySelector(sel).getBoundingClientRect().right"
                    " <= window.innerWidth",
                    arg=f"{FOREST} svg.main-svg",
                )
                assert page.evaluate(WIDE) == []
            # names wrap only between their words: each part between two <wbr> on one line
            assert page.evaluate(BROKEN, "#policy-commit table.per-model") == [], width
            section = page.locator("#policy-commit section.per-model")
            target = DOCS if os.environ.get("TA_DOCS_SCREENSHOTS") == "1" else tmp_path
            section.screenshot(path=str(target / f"run-per-model-{theme}-{width}.png"))
        page.set_viewport_size({"width": 1280, "height": 900})
    assert seen["light"]["tick"] != seen["dark"]["tick"]
    assert seen["light"]["muted"] != seen["dark"]["muted"]
    assert errors == [], errors


def test_matrix_and_compare_pages_in_both_themes(page, live_server, alice, run, tmp_path):
    """The tasks × models matrix and the paired comparison of two runs: readable badges in both
    themes, nothing wider than a 390 px phone."""
    errors = watch(page)
    one = audit_run_create(
        project=run.project,
        policies=["commit"],
        settings=SETTINGS,
        trace_filter={"model": "claude"},
        enqueue=False,
        environment="none",
    )
    audit_run_start(run_id=one.pk, inline=True)
    login(page, live_server, "alice", "alice-pw")
    target = DOCS if os.environ.get("TA_DOCS_SCREENSHOTS") == "1" else tmp_path
    pages = {
        "run-matrix": f"/audits/{run.pk}/matrix/?policy=commit&transition=same",
        "run-compare-paired": f"/audits/compare/?a={run.pk}&b={one.pk}",
    }
    for name, url in pages.items():
        page.goto(live_server.url + url)
        for theme in ("light", "dark"):
            page.select_option("#theme-select", theme)
            for width in (1440, 390):
                page.set_viewport_size({"width": width, "height": 900})
                if width == 390:
                    assert page.evaluate(WIDE) == [], name
                page.screenshot(path=str(target / f"{name}-{theme}-{width}.png"), full_page=True)
    page.goto(live_server.url + pages["run-matrix"])
    assert page.locator("table.task-matrix a.mx-link span.tr-same").count() == 4
    page.goto(live_server.url + pages["run-compare-paired"])
    assert page.locator("p.trace-sets").inner_text().startswith("200 traces audited by both")
    assert errors == [], errors
