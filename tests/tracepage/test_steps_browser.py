"""Real Chromium on the trace page's steps tree: rows fold and unfold by mouse and keyboard, a
row's link brings its event into view (opened) in the timeline or the side-by-side, the tree
fits a 390 px phone without sideways scrolling, its header row names its columns at both
widths, and its text and bars stay readable in the dark theme; an OTLP trace draws its span
tree; a BFCL trace (durations, no times) shows each model call's duration and tokens.
TA_DOCS_SCREENSHOTS=1 writes trace-steps-{light,dark}-{1440,390}.png,
trace-steps-otlp-light-1440.png and trace-steps-bfcl-light-{1440,390}.png (the page down to the
tree's end) to docs/screenshots."""

from __future__ import annotations

import pytest

from tests.browsing import WIDE, login, shot, watch
from tests.importers.otlp_samples import openinference_spans, otlp_json
from tests.site.test_themes_mobile_browser import AA, TEXT_COLOURS, contrast
from tests.tracepage.conftest import ingest, timed_trace
from tests.tracepage.test_steps_durations import REAL
from traces.models import Trace
from traces.services import upload_create, upload_process

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Each drawn bar's colour and the colour of the box it is drawn on (WCAG 2.1 asks 3:1 of the
# graphics that carry meaning).
BAR_COLOURS = """() => {
  const box = getComputedStyle(document.querySelector('#steps .wf')).backgroundColor;
  return [...document.querySelectorAll('#steps .wf-bar:not(.derived)')]
    .filter(b => b.getClientRects().length)
    .map(b => ({cls: b.className, fg: getComputedStyle(b).backgroundColor, bg: box}));
}"""

IN_VIEW = """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
  return r.top >= 0 && r.bottom <= window.innerHeight; }"""


@pytest.fixture
def timed(project):  # type: ignore[no-untyped-def]
    ingest(project, timed_trace())
    return Trace.objects.get(external_id="timed")


def test_rows_fold_by_mouse_and_keyboard_and_link_to_their_event(page, live_server, alice, timed):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(live_server.url + timed.get_absolute_url())
    assistant = page.locator("#steps details.wf-node", has=page.locator(
        "> summary", has_text="assistant")).first  # fmt: skip
    call = page.locator("#steps summary.wf-row", has_text="search_flights")
    assert call.is_visible() and "2.35 s" in call.inner_text()
    # the mouse: the assistant's row folds its tool calls away, and back
    assistant.locator("> summary").click(position={"x": 5, "y": 5})
    assert call.is_hidden()
    assistant.locator("> summary").click(position={"x": 5, "y": 5})
    assert call.is_visible()
    # the keyboard: a row's summary takes focus; Enter folds, Enter unfolds
    turn1 = page.locator("#steps summary.wf-row", has_text="Turn 1")
    booking = page.locator("#steps summary.wf-row", has_text="book_flight")
    turn1.focus()
    page.keyboard.press("Enter")
    assert booking.is_hidden()
    page.keyboard.press("Enter")
    assert booking.is_visible()
    # a row's link opens its event in the timeline, scrolled into view
    assert page.locator("#ev-11").get_attribute("class").count("collapsed") == 1
    page.locator("#steps a.wf-ev", has_text="#11").click()
    page.wait_for_url("**#ev-11")
    event = page.locator("#ev-11")
    event.locator(".ev-body").wait_for(state="visible")
    assert "collapsed" not in (event.get_attribute("class") or "")
    assert page.evaluate(IN_VIEW, "#ev-11")
    assert "payment declined" in event.inner_text()
    assert errors == [], errors


def test_a_step_links_to_its_row_in_the_side_by_side(page, live_server, alice, audited_with_claims):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    t = Trace.objects.get(external_id="hostile")
    page.goto(live_server.url + t.get_absolute_url())
    link = page.locator("#steps a.wf-sbs").first
    target = link.get_attribute("href")
    assert target and target.startswith("#sbs-ev-")
    link.click()
    page.wait_for_url("**" + target)
    row = page.locator(target)
    row.wait_for(state="visible")  # opened, even inside the collapsed identical prefix
    assert page.evaluate(IN_VIEW, target)
    assert errors == [], errors


def test_the_tree_fits_a_phone_and_reads_in_both_themes(page, live_server, alice, timed, tmp_path):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    url = live_server.url + timed.get_absolute_url()
    for theme in ("light", "dark"):
        page.goto(url)
        page.select_option("#theme-select", theme)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(url)
            fits = page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
            assert fits, (theme, width, page.evaluate(WIDE))
            # nothing of the tree sticks out of its box, which does not scroll sideways either
            inside = page.evaluate(
                "(() => { const w = document.querySelector('#steps .wf');"
                " return w.scrollWidth <= w.clientWidth; })()"
            )
            assert inside, (theme, width)
            # the header row names the step column at phone width too, not an empty row
            head = page.locator("#steps .wf-head")
            assert head.locator(".wf-name").inner_text() == "Step", (theme, width)
            assert "Duration" in head.inner_text(), (theme, width)
            texts = page.evaluate(TEXT_COLOURS, "#steps")
            low = [(t["text"], round(contrast(t["fg"], t["bg"]), 2)) for t in texts
                   if contrast(t["fg"], t["bg"]) < AA]  # fmt: skip
            assert low == [], (theme, width, low)
            bars = page.evaluate(BAR_COLOURS)
            assert len(bars) >= 10, bars
            faint = [b for b in bars if contrast(b["fg"], b["bg"]) < 3]
            assert faint == [], (theme, width, faint)
            shot(page, tmp_path, f"trace-steps-{theme}-{width}.png", until="#steps")
    assert errors == [], errors


def test_an_otlp_trace_draws_its_span_tree(page, live_server, alice, project, tmp_path):
    """Spans made by the OpenTelemetry SDK (OpenInference attributes), imported from OTLP/JSON:
    the tree nests them by parent, each drawn from its own start and end."""
    upload, _ = upload_create(
        project=project,
        fileobj=otlp_json(openinference_spans(("Paris",))),
        filename="spans.json",
        source="cli",
        enqueue=False,
    )
    assert upload_process(upload_id=upload.pk).status == "done"
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(live_server.url + Trace.objects.get(project=project).get_absolute_url())
    spans = page.locator("#steps summary.k-span")
    assert spans.count() == 4 and "AGENT" in spans.first.inner_text()
    assert page.locator("#steps summary.k-span .wf-bar").count() == 4
    # the agent's row folds everything under it
    spans.first.click(position={"x": 5, "y": 5})
    assert spans.nth(1).is_hidden()
    spans.first.click(position={"x": 5, "y": 5})
    assert spans.nth(1).is_visible()
    shot(page, tmp_path, "trace-steps-otlp-light-1440.png", until="#steps")
    assert errors == [], errors


def test_a_bfcl_trace_shows_each_model_call_s_duration_and_tokens(
    page, live_server, alice, project, tmp_path
):
    """Real BFCL records (durations per model call, no times): the Duration column is there
    and shows each step's latency, a turn the sum of its steps', with no bars, at both widths."""
    upload, _ = upload_create(
        project=project, fileobj=REAL.read_bytes(), filename=REAL.name, source="cli",
        enqueue=False,
    )  # fmt: skip
    assert upload_process(upload_id=upload.pk).status == "done"
    trace = Trace.objects.get(project=project, external_id__endswith="multi_turn_base_4")
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(live_server.url + trace.get_absolute_url())
        head = page.locator("#steps .wf-head")
        assert head.locator(".wf-dur").is_visible() and head.locator(".wf-tok").is_visible()
        ls = page.locator("#steps .wf-row", has_text="ls").first
        assert ls.locator(".wf-dur").inner_text() == "1.31 s"
        assert ls.locator(".wf-tok").inner_text() == "1,989 / 14"
        turn0 = page.locator("#steps summary.wf-row", has_text="Turn 0")
        assert turn0.locator(".wf-dur").inner_text() == "4.18 s"
        assert page.locator("#steps .wf-bar").count() == 0
        assert page.locator("#steps-no-times").is_visible()
        fits = page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        assert fits, (width, page.evaluate(WIDE))
        shot(page, tmp_path, f"trace-steps-bfcl-light-{width}.png", until="#steps")
    assert errors == [], errors
