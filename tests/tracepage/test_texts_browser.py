"""Real Chromium: column headings never break inside a word at 1440 px ("Mod|el") on the
dashboard, traces list and run page; the side-by-side view's folded "N identical steps" row
reads at AA contrast at 1440 and 390 px in both themes; the trace page shows the commit rule's
answers as the model wrote them, and hides its decisions from an annotator holding an item on
that trace.

TA_DOCS_SCREENSHOTS=1 writes screenshots of the trace pages (1440 and 390 px, light and dark)
to docs/screenshots."""

from __future__ import annotations

import pytest

from auditor.annotation.services import item_claim, queue_create
from auditor.runs.services import audit_run_create, audit_run_start
from tests.annotate.conftest import ingest_bytes, lock_traces, make_run, member
from tests.annotate.test_inbox_errors_browser import each_look
from tests.browsing import login, shot, watch
from tests.builders.events import Events, pushback_trace
from tests.site.test_themes_mobile_browser import AA, TEXT_COLOURS, contrast, ingest
from traces.models import Membership, Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Words of column headings and of key-value labels (dt) laid out over more than one line box.
SPLIT_HEADING_WORDS = """() => {
  const out = [];
  for (const th of document.querySelectorAll('main thead th, main dt')) {
    if (!th.getClientRects().length) continue;
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const re = /\\S+/g;
      let m;
      while ((m = re.exec(n.textContent))) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].map((x) => Math.round(x.top)));
        if (tops.size > 1) out.push(m[0]);
      }
    }
  }
  return out.slice(0, 10);
}"""


def test_headings_keep_their_words_at_1440(page, live_server, project, alice):
    run = make_run(project, locks=2, examples=True)
    long = Events("long", task={"id": "task-" + "x" * 60, "category": "c" * 50})
    long.events[0].update(agent="agent-" + "a" * 60, model="org/" + "Model-" * 20 + "Instruct")
    long.user("Hello?", turn=0)
    ingest(project, long.events)
    errors = watch(page)
    page.set_viewport_size({"width": 1440, "height": 900})
    login(page, live_server, "alice", "alice-pw")
    for url in (
        f"/projects/{project.pk}/",
        f"/projects/{project.pk}/traces/",
        run.get_absolute_url(),
        Trace.objects.get(external_id="long").get_absolute_url(),
    ):
        page.goto(live_server.url + url)
        assert page.evaluate(SPLIT_HEADING_WORDS) == [], url
    assert errors == [], errors


def test_folded_identical_steps_read_in_both_themes(
    page, live_server, alice, audited_with_claims, tmp_path
):
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    url = live_server.url + Trace.objects.get(external_id="hostile").get_absolute_url()
    for theme in ("light", "dark"):
        page.goto(url)
        page.select_option("#theme-select", theme)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(url)
            texts = page.evaluate(TEXT_COLOURS, "#sbs .sbs-prefix > summary")
            assert any("identical step" in t["text"] for t in texts), (theme, width, texts)
            ratios = [(t["text"], round(contrast(t["fg"], t["bg"]), 2)) for t in texts]
            assert all(r >= AA for _, r in ratios), (theme, width, ratios)
            page.locator("#sbs").scroll_into_view_if_needed()
            shot(page, tmp_path, f"trace-sbs-folded-{theme}-{width}.png", full_page=False)
    assert errors == [], errors


def test_trace_page_texts_and_blind_decisions(
    page, live_server, project, alice, django_user_model, tmp_path
):
    ingest(project, pushback_trace([1, 0, 1]))
    ingest_bytes(project, lock_traces(1), "locks.jsonl")  # a TwinCheck pair to annotate
    run = audit_run_create(project=project, environment="none", enqueue=False)
    audit_run_start(run_id=run.pk, inline=True)
    run.refresh_from_db()
    trace = Trace.objects.get(external_id="p")
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    url = f"{live_server.url}{trace.get_absolute_url()}?run={run.pk}&policy=commit"
    page.goto(url)
    answers = page.locator("#panel-commit ol.answers .ans")
    assert answers.first.inner_text() == "He did not fail maths"
    assert answers.first.get_attribute("title") == "compared as: he did not fail maths"
    each_look(page, tmp_path, url, "trace-commit")

    bob = member(django_user_model, project, "bob", Membership.Role.ANNOTATOR)
    queue = queue_create(run=run, name="pairs", kinds=["pair"], k=2, user=alice)
    item = item_claim(queue=queue, user=bob)
    assert item is not None
    held = Trace.objects.get(pk=item.result.trace_id)
    page.context.clear_cookies()
    login(page, live_server, "bob", "bob-pw")
    page.goto(live_server.url + held.get_absolute_url())
    assert page.locator("#decisions-hidden").is_visible()
    assert page.locator("#audit .policy-tab").count() == 0
    each_look(page, tmp_path, live_server.url + held.get_absolute_url(), "trace-held-item")
    assert errors == [], errors
