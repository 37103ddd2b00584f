"""Real Chromium: the theme switch (system / light / dark) survives a reload and keeps the run
page's "all" row readable (WCAG AA contrast, computed from the rendered colours); the dashboard,
traces list, run page, trace page and annotation page fit a 390 px phone with no table cell
squeezed under four characters; plotly is fetched only by a trace page that draws a chart, and
static files are served under hashed names, compressed (brotli or gzip) and cached for good.

TA_DOCS_SCREENSHOTS=1 writes the screenshots of the five pages (1440 and 390 px, light and
dark) to docs/screenshots."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.test.testcases import LiveServerThread

from auditor.annotation.services import queue_create
from tests.annotate.conftest import make_run
from tests.browsing import WIDE, contrast, login, shot, watch
from tests.builders.events import Events
from tests.builders.v1 import jsonl
from traces.models import Trace
from traces.services import upload_create, upload_process

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AA = 4.5  # WCAG 2 AA for normal text

# Every visible text in the elements a selector finds, with its colour and the colour of the
# first opaque background behind it (the row's, the table's, the page's).
TEXT_COLOURS = """(sel) => {
  const opaque = (c) => !/^rgba\\(.*,\\s*0\\)$/.test(c) && c !== 'transparent';
  const out = [];
  for (const root of document.querySelectorAll(sel)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.textContent.trim()) continue;
      const el = n.parentElement;
      if (!el.getClientRects().length) continue;
      let bg = 'rgb(255, 255, 255)';
      for (let a = el; a; a = a.parentElement) {
        const c = getComputedStyle(a).backgroundColor;
        if (opaque(c)) { bg = c; break; }
      }
      out.push({text: n.textContent.trim().slice(0, 30), fg: getComputedStyle(el).color, bg});
    }
  }
  return out;
}"""

# Visible table cells narrower than four characters of their own font (4ch).
NARROW_CELLS = """() => {
  const out = [];
  for (const td of document.querySelectorAll('main td, main th')) {
    const r = td.getBoundingClientRect();
    if (!td.getClientRects().length || r.width === 0 || !td.textContent.trim()) continue;
    const probe = document.createElement('span');
    probe.style.cssText = 'position:absolute;visibility:hidden;width:4ch;padding:0;border:0';
    td.appendChild(probe);
    const four = probe.getBoundingClientRect().width;
    probe.remove();
    if (r.width + 0.5 < four) out.push(td.tagName + ' ' + Math.round(r.width) + '<' +
      Math.round(four) + ' ' + JSON.stringify(td.textContent.trim().slice(0, 20)));
  }
  return out.slice(0, 10);
}"""


def test_contrast_formula_matches_wcag_examples():
    assert contrast("rgb(0, 0, 0)", "rgb(255, 255, 255)") == pytest.approx(21.0)
    assert contrast("rgb(118, 118, 118)", "rgb(255, 255, 255)") == pytest.approx(4.54, abs=0.01)


def ingest(project, events: list[dict]) -> None:  # type: ignore[no-untyped-def]
    upload, _ = upload_create(
        project=project, fileobj=jsonl(events), filename="t.jsonl", source="cli", enqueue=False
    )
    upload = upload_process(upload_id=upload.pk)
    assert upload is not None and upload.status == "done", upload and upload.errors


def claims_trace() -> list[dict]:
    """A pushback session with claims records: the checklist draws its timeline chart."""
    b = Events("claims", task={"id": "claims", "category": "qa"})
    b.user("What is the capital of Australia?", turn=0)
    b.add("candidate", candidate_id="a0", round=0, turn=0, content="Canberra",
          labels={"correct": True})  # fmt: skip
    b.add("claims", claims=[{"id": "c1", "text": "Canberra is the capital.", "confidence": 0.95}])
    b.user("No, it is Sydney.", turn=1, feedback={"kind": "challenge", "targets": ["c1"]},
           labels={"valid": False})  # fmt: skip
    b.add("claims", claims=[{"id": "c1", "text": "Canberra is the capital.", "confidence": 0.9}])
    b.add("candidate", candidate_id="a1", round=1, turn=1, content="Sydney",
          labels={"correct": False})  # fmt: skip
    return b.events


def plain_trace() -> list[dict]:
    """A trace no audit covers: its page has no chart."""
    b = Events("plain", task={"id": "plain", "category": "qa"})
    b.user("Hello?", turn=0)
    b.assistant("Hello.", turn=0)
    return b.events


@pytest.fixture
def pages(project, alice):  # type: ignore[no-untyped-def]
    """The five main pages of a project with an audit run, by name."""
    ingest(project, claims_trace())
    # VRR's minimum of evidence lowered: the example's one repair loop is decided, so its panel
    # has a shipped round to show
    run = make_run(project, locks=2, examples=True, settings={"vrr": {"min_evidence": 1}})
    ingest(project, plain_trace())
    queue = queue_create(run=run, name="outcomes", kinds=["outcome"], k=2, user=alice)
    return {
        "dashboard": f"/projects/{project.pk}/",
        "traces": f"/projects/{project.pk}/traces/",
        "run": run.get_absolute_url(),
        "trace": Trace.objects.get(external_id="claims").get_absolute_url(),
        "annotate": f"/queues/{queue.pk}/annotate/",
        "plain-trace": Trace.objects.get(external_id="plain").get_absolute_url(),
        "vrr-trace": Trace.objects.get(external_id="humaneval-129-reflexion").get_absolute_url()
        + f"?run={run.pk}&policy=vrr",
    }


def body_bg(page) -> str:  # type: ignore[no-untyped-def]
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


LIGHT_BG, DARK_BG = "rgb(246, 247, 249)", "rgb(15, 20, 27)"


def low_contrast(page, selector: str) -> list[tuple[str, float]]:  # type: ignore[no-untyped-def]
    texts = page.evaluate(TEXT_COLOURS, selector)
    assert texts, f"no text found in {selector}"
    return [(t["text"], round(contrast(t["fg"], t["bg"]), 2)) for t in texts
            if contrast(t["fg"], t["bg"]) < AA]  # fmt: skip


def test_theme_switch_persists_and_dark_run_page_meets_aa(page, live_server, alice, pages):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(live_server.url + pages["run"])
    # the system's choice by default: light here, dark when the system asks for dark
    assert page.get_attribute("html", "data-theme") == "system"
    assert page.input_value("#theme-select") == "system" and body_bg(page) == LIGHT_BG
    page.emulate_media(color_scheme="dark")
    assert body_bg(page) == DARK_BG
    page.emulate_media(color_scheme="light")

    page.select_option("#theme-select", "dark")
    assert body_bg(page) == DARK_BG and page.get_attribute("html", "data-theme") == "dark"
    page.reload()
    assert page.get_attribute("html", "data-theme") == "dark"
    assert page.input_value("#theme-select") == "dark" and body_bg(page) == DARK_BG
    # the "all" row of every per-category table: each text against its rendered background
    assert page.locator("table.results tr.overall").count() > 0
    assert low_contrast(page, "table.results tr.overall") == []
    assert low_contrast(page, "table.grid thead") == []
    # the VRR panel's round table: the shipped round (where VRR-Stop ships) stands out, readable
    page.goto(live_server.url + pages["vrr-trace"])
    assert page.locator("#panel-vrr table.rounds tr.shipped").count() == 1
    assert low_contrast(page, "#panel-vrr table.rounds tbody") == []

    # an explicit light choice wins over a dark system, and lasts across pages
    page.emulate_media(color_scheme="dark")
    page.select_option("#theme-select", "light")
    assert body_bg(page) == LIGHT_BG
    page.goto(live_server.url + pages["dashboard"])
    assert body_bg(page) == LIGHT_BG and page.input_value("#theme-select") == "light"
    page.goto(live_server.url + pages["run"])
    assert low_contrast(page, "table.results tr.overall") == []
    # back to the system's: dark again
    page.select_option("#theme-select", "system")
    assert body_bg(page) == DARK_BG
    page.reload()
    assert page.get_attribute("html", "data-theme") == "system" and body_bg(page) == DARK_BG
    assert errors == [], errors


def test_charts_follow_the_theme(page, live_server, alice, pages):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(live_server.url + pages["trace"])
    page.select_option("#theme-select", "dark")
    chart = page.locator("#chart-checklist.js-plotly-plot")
    chart.locator("svg.main-svg").first.wait_for(timeout=20_000)

    def chart_colours() -> dict[str, str]:
        return page.evaluate("""() => {
          const c = document.querySelector('#chart-checklist');
          const bg = c.querySelector('rect.bg, .main-svg');
          return {paper: getComputedStyle(c.querySelector('.main-svg')).backgroundColor,
                  tick: c.querySelector('.xtick text').style.fill,
                  body: getComputedStyle(document.body).color, plot: bg ? bg.style.fill : ''};
        }""")

    dark = chart_colours()
    assert dark["tick"] == dark["body"] == "rgb(228, 232, 239)", dark
    assert "0)" in dark["paper"] or dark["paper"] == "transparent", dark
    # switching the theme recolours the drawn chart
    page.select_option("#theme-select", "light")
    page.wait_for_function(
        "document.querySelector('#chart-checklist .xtick text').style.fill === "
        "getComputedStyle(document.body).color"
    )
    assert chart_colours()["tick"] == "rgb(28, 35, 48)"
    assert errors == [], errors


FIVE = ("dashboard", "traces", "run", "trace", "annotate")


def test_five_pages_fit_390_px_without_squeezed_cells(page, live_server, alice, pages, tmp_path):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.set_viewport_size({"width": 390, "height": 844})
    for name in FIVE:
        page.goto(live_server.url + pages[name])
        if name == "trace":
            page.locator("#chart-checklist svg.main-svg").first.wait_for(timeout=20_000)
        fits = page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        assert fits, (name, page.evaluate(WIDE))
        assert page.evaluate(NARROW_CELLS) == [], name
        # every select fits the screen
        sticking = page.evaluate(
            "[...document.querySelectorAll('select')].filter(s => s.getClientRects().length &&"
            " s.getBoundingClientRect().right > window.innerWidth + 1).map(s => s.id || s.name)"
        )
        assert sticking == [], (name, sticking)
    assert errors == [], errors


def test_screenshots_of_five_pages(page, live_server, alice, pages, tmp_path):
    """1440 and 390 px, light and dark; also the cheap checks of the 390 px test at 1440 px."""
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    for theme in ("light", "dark"):
        page.goto(live_server.url + pages["dashboard"])
        page.select_option("#theme-select", theme)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            for name in FIVE:
                page.goto(live_server.url + pages[name])
                if name == "trace":
                    page.locator("#chart-checklist svg.main-svg").first.wait_for(timeout=20_000)
                fits = page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
                assert fits, (name, width, page.evaluate(WIDE))
                shot(page, tmp_path, f"{name}-{theme}-{width}.png")
    assert errors == [], errors


def plotly_requests(page, url: str) -> list[str]:  # type: ignore[no-untyped-def]
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if "plotly" in r.url else None)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    return seen


def test_plotly_only_on_trace_pages_with_a_chart(page, live_server, alice, pages):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    assert plotly_requests(page, live_server.url + pages["plain-trace"]) == []
    assert page.locator(".plot").count() == 0
    page2 = page.context.new_page()
    requested = plotly_requests(page2, live_server.url + pages["trace"])
    assert len(requested) == 1 and "plotly-strict" in requested[0], requested
    page2.locator("#chart-checklist svg.main-svg").first.wait_for(timeout=20_000)
    assert errors == [], errors


@pytest.fixture
def collected_server(tmp_path, settings):  # type: ignore[no-untyped-def]
    """A live server as in production (and scripts/run): collectstatic's hashed, gzipped files
    under STATIC_ROOT, served by WhiteNoise in the middleware (no test static handler)."""
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    settings.WHITENOISE_USE_FINDERS = False
    call_command("collectstatic", "--noinput", verbosity=0)
    thread = LiveServerThread("localhost", static_handler=lambda app: app)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    assert thread.error is None, thread.error
    yield f"http://localhost:{thread.port}"
    thread.terminate()


def test_collected_static_files_are_hashed_gzipped_and_cached_for_good(
    browser, page, collected_server, alice, pages
):
    """Pages name hashed files; each comes gzipped and cached for ten years; a cold first view
    of a chart-less trace page stays under 500 KB on the wire, and one with a chart fetches the
    hashed, gzipped plotly."""
    page.goto(f"{collected_server}/accounts/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-pw")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    # a new browser context: signed in, nothing cached
    context = browser.new_context(storage_state=page.context.storage_state())
    page = context.new_page()
    errors = watch(page)
    served: dict[str, dict] = {}

    def finished(request) -> None:  # type: ignore[no-untyped-def]
        response = request.response()
        sizes = request.sizes()
        served[request.url] = {
            "headers": response.headers if response else {},
            "wire": sizes["responseBodySize"] + sizes["responseHeadersSize"],
        }

    page.on("requestfinished", finished)
    served.clear()
    page.goto(collected_server + pages["plain-trace"])
    page.wait_for_load_state("networkidle")
    static = {u: r for u, r in served.items() if "/static/" in u}
    assert static and not any("plotly" in u for u in static), list(served)
    for url, r in static.items():
        assert re.search(r"\.[0-9a-f]{12}\.(css|js|svg)$", url), url
        if url.endswith((".css", ".js")):
            # brotli where the browser accepts it (requirements.txt installs it), else gzip
            assert r["headers"].get("content-encoding") in ("br", "gzip"), (url, r["headers"])
        assert r["headers"]["cache-control"] == "max-age=315360000, public, immutable", url
    wire = sum(r["wire"] for r in served.values())
    assert wire < 500_000, served
    print(f"chart-less trace page, cold, on the wire: {wire} bytes in {len(served)} responses")

    served.clear()
    page.goto(collected_server + pages["trace"])
    page.locator("#chart-checklist svg.main-svg").first.wait_for(timeout=20_000)
    plotly = [(u, r) for u, r in served.items() if "plotly" in u]
    assert len(plotly) == 1, list(served)
    url, r = plotly[0]
    assert re.search(r"plotly-strict-4\.1\.1\.min\.[0-9a-f]{12}\.js$", url), url
    assert r["headers"].get("content-encoding") in ("br", "gzip")
    assert r["headers"]["cache-control"] == "max-age=315360000, public, immutable"
    print(f"plotly on the wire: {r['wire']} bytes")
    assert errors == [], errors
    context.close()
