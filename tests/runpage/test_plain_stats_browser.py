"""Real Chromium: the run page's statistics in plain words — a sentence under each headline
number, a definition of each term on hover, on keyboard focus and on tap, no raw field names,
each interval printed once, one set of unknowns and one denominator — and its chart of Δ per
policy; every chart's colours (run page and trace page) readable in dark mode: text at least
4.5:1 and marks at least 3:1 against the chart's background.

TA_DOCS_SCREENSHOTS=1 writes the run page's headline and chart (1440 and 390 px, light and
dark) to docs/screenshots."""

from __future__ import annotations

import re

import pytest

from auditor.runs.glossary import TERMS
from tests.annotate.conftest import make_run
from tests.browsing import CHART_COLOURS, WIDE, contrast, login, shot, watch
from tests.site.test_themes_mobile_browser import claims_trace, ingest
from traces.models import Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: Names of fields and symbols the page must not show (human labels stand in for them).
RAW = ("n_unknown", "n_known", "ci_known", "rho0", "rho1", "b⁻_k", "b_k", "G_k", "CI over known")
TEXT_AA, MARK_AA = 4.5, 3.0


@pytest.fixture
def run(project):  # type: ignore[no-untyped-def]
    ingest(project, claims_trace())
    # VRR's minimum of evidence lowered: the example's repair loop is decided, so its trace
    # page draws the VRR chart
    return make_run(project, locks=2, examples=True, settings={"vrr": {"min_evidence": 1}})


def _int(text: str) -> int:
    m = re.search(r"\d+", text)
    assert m, text
    return int(m.group())


def test_headline_numbers_read_in_plain_words(page, live_server, alice, run):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(live_server.url + run.get_absolute_url())
    body = page.inner_text("body")
    for raw in RAW:
        assert raw not in body, raw
    for policy in run.policies:
        sec = page.locator(f"#policy-{policy}")
        head = sec.locator("dl.headline")
        # a sentence under each headline number
        for k in ("rescue-harm", "mcnemar", "unknown", "na"):
            assert len(head.locator(f'[data-k="{k}"]').inner_text().split()) >= 6, (policy, k)
        assert len(head.locator(".delta-stats .meaning").inner_text().split()) >= 8, policy
        stats = head.locator(".delta-stats").inner_text()
        # each interval once: with no unknowns only the one over known pairs
        assert stats.count("95 % interval") == (2 if "covering every unknown" in stats else 1)
        # one set of unknowns: the Δ's unknowns plus exact replays are the traces needing
        # annotation, the number in the headline and in the table's "all" row
        need = _int(head.locator('[data-k="unknown-traces"]').inner_text())
        in_delta = _int(head.locator('.n-unknown[data-k="delta-unknown"] b').inner_text())
        replays = head.locator('[data-k="unknown-replays"]')
        extra = _int(replays.inner_text()) if replays.count() else 0
        assert in_delta + extra == need, (policy, in_delta, extra, need)
        row = sec.locator("table.results tr.overall td.num").nth(6).inner_text()
        assert _int(row) == need, (policy, row, need)
        # one denominator: the applicable traces, out of the run's
        scope = sec.locator('h2 [data-k="scope"]').inner_text()
        m = re.search(
            r"(\d+) applicable of (\d+) traces · intervened in (\d+) of those (\d+)", scope
        )
        assert m and m.group(1) == m.group(4) and int(m.group(3)) <= int(m.group(1)), scope
        assert f"Of the {m.group(1)} applicable traces" in head.inner_text()
    # Holm explained in one sentence wherever a Holm-adjusted p is shown
    for sec in page.locator("section.policy").all():
        if sec.locator('table.results .term[data-term="holm"]').count():
            note = sec.locator('p.table-note [data-k="holm-note"]').inner_text()
            assert "tested at once" in note and note.count(".") == 1, note
    # every term of the brief is on the page, each with a definition the glossary carries
    terms = page.evaluate(
        "[...document.querySelectorAll('.term')].map(t => [t.dataset.term, t.dataset.def,"
        " !!document.getElementById(t.getAttribute('aria-describedby'))])"
    )
    keys = {k for k, _, _ in terms}
    assert {"delta", "interval", "bounds", "rescue", "harm", "unknown", "na", "holm"} <= keys
    assert {"mcnemar", "paired"} <= keys
    assert all(d == TERMS[k][1] and found for k, d, found in terms)
    assert errors == [], errors


def _tooltip(page, selector: str) -> str:  # type: ignore[no-untyped-def]
    return page.evaluate(
        "(sel) => getComputedStyle(document.querySelector(sel), '::after').content", selector
    )


def test_definitions_show_on_hover_keyboard_and_tap(browser, live_server, alice, run):
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True)
    page = context.new_page()
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(live_server.url + run.get_absolute_url())
    first = ".policy dl.headline .term"
    assert _tooltip(page, first) == "none"  # hidden until asked for
    # keyboard: Tab reaches a term and its definition shows
    for _ in range(80):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('term')"):
            break
    else:
        raise AssertionError("no term reachable by Tab")
    key = page.evaluate("document.activeElement.dataset.term")
    shown = page.evaluate("getComputedStyle(document.activeElement, '::after').content")
    assert shown.strip('"') == TERMS[key][1]
    # the definition box stays on a phone's screen
    box = page.evaluate(
        "(() => { const s = getComputedStyle(document.activeElement, '::after');"
        " return [s.position, s.maxWidth]; })()"
    )
    assert box[0] == "fixed", box
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth"), (
        page.evaluate(WIDE)
    )
    # tap: a term in the headline takes focus and shows its definition
    page.locator(".policy dl.headline .term[data-term='rescue']").first.tap()
    assert page.evaluate("document.activeElement.dataset.term") == "rescue"
    assert _tooltip(page, ":focus").strip('"') == TERMS["rescue"][1]
    context.close()
    assert errors == [], errors


def test_hover_shows_a_definition(page, live_server, alice, run):
    login(page, live_server, "alice", "alice-pw")
    page.goto(live_server.url + run.get_absolute_url())
    term = page.locator("table.results thead .term[data-term='mcnemar']").first
    term.hover()
    assert (
        _tooltip(page, "table.results thead .term[data-term='mcnemar']:hover").strip('"')
        == TERMS["mcnemar"][1]
    )


def _chart_ok(page, selector: str) -> None:  # type: ignore[no-untyped-def]
    page.locator(f"{selector} svg.main-svg").first.wait_for(timeout=20_000)
    c = page.evaluate(CHART_COLOURS, selector)
    assert c["marks"] and c["texts"], c
    low_marks = {
        (m["what"], m["colour"]) for m in c["marks"] if contrast(m["colour"], c["bg"]) < MARK_AA
    }
    low_texts = {
        (t["what"], t["colour"]) for t in c["texts"] if contrast(t["colour"], c["bg"]) < TEXT_AA
    }
    assert low_marks == set() and low_texts == set(), (selector, c["bg"], low_marks, low_texts)


def test_the_run_chart_of_delta_and_every_chart_is_readable_in_dark_mode(
    page, live_server, alice, run, tmp_path
):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(live_server.url + run.get_absolute_url())
    chart = "#delta-chart .plot"
    page.locator(f"{chart} svg.main-svg").first.wait_for(timeout=20_000)
    # a row per policy with an interval, its Δ a diamond with its interval as an error bar
    figure = page.evaluate("JSON.parse(document.getElementById('delta-chart-data').textContent)")
    rows = figure["layout"]["yaxis"]["ticktext"]
    assert set(rows) <= set(run.policies) and rows, rows
    assert page.locator(f"{chart} .ytick").count() == len(rows)
    assert page.locator(f"{chart} .errorbar").count() >= 1
    # bounds where outcomes are unknown
    assert any(t["name"].startswith("bounds") for t in figure["data"]), figure["data"]
    for theme in ("light", "dark"):
        page.select_option("#theme-select", theme)
        page.wait_for_function(
            "(sel) => document.querySelector(sel).style.fill === "
            "getComputedStyle(document.body).color",
            arg=f"{chart} .ytick text",
        )
        if theme == "dark":
            _chart_ok(page, chart)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            if width == 390:
                page.wait_for_function(
                    "(sel) => document.querySelector(sel).getBoundingClientRect().right"
                    " <= window.innerWidth",
                    arg=f"{chart} svg.main-svg",
                )
                assert page.evaluate(WIDE) == []
            # the chart, then the first policy's headline with a definition showing
            page.locator("#delta-chart").scroll_into_view_if_needed()
            page.evaluate(
                "window.scrollTo(0, document.getElementById('delta-chart').offsetTop - 8)"
            )
            shot(page, tmp_path, f"run-stats-chart-{theme}-{width}.png", full_page=False)
            term = page.locator(".policy dl.headline .term[data-term='delta']").first
            term.focus()
            page.evaluate(
                "window.scrollTo(0, document.querySelector('.policy dl.headline')"
                ".getBoundingClientRect().top + window.scrollY - 8)"
            )
            shot(page, tmp_path, f"run-stats-{theme}-{width}.png", full_page=False)
            page.evaluate("document.activeElement.blur()")
        page.set_viewport_size({"width": 1280, "height": 900})
    # the trace page's charts, in the dark theme chosen above
    for url, sel in (
        (Trace.objects.get(external_id="claims").get_absolute_url(), "#chart-checklist"),
        (
            Trace.objects.get(external_id="humaneval-129-reflexion").get_absolute_url()
            + f"?run={run.pk}&policy=vrr",
            "#chart-vrr",
        ),
    ):
        page.goto(live_server.url + url)
        _chart_ok(page, sel)
    assert errors == [], errors
