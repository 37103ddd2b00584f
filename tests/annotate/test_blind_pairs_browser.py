"""Real Chromium: pair items are blind. On repeat-after-error pairs — where the agent's call is
the exact repeat of the failed call shown just above — nothing on the item tells the sides apart
but their content: the two candidates are "A" and "B" with the same wording and markup, in an
order random across items and stable for one annotator on reload; the item's text names no
actor, twin or repeat; and the trace page keeps its decisions and its timeline from an annotator
who may still be asked to judge one of its pairs.

TA_DOCS_SCREENSHOTS=1 writes the pair item (1440 and 390 px, light and dark) to
docs/screenshots."""

from __future__ import annotations

import pytest

from auditor.annotation.human_gate import blind_order
from auditor.annotation.services import queue_create
from auditor.models import AnnotationItem
from auditor.runs.services import audit_run_create, audit_run_start
from tests.annotate.conftest import ingest_bytes, member
from tests.browsing import WIDE, item_id, login, press_and_wait, shot, watch
from tests.builders.events import Events, account_tools
from tests.builders.v1 import jsonl
from traces.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

N = 8

# Each candidate's markup with its letter taken out: the tags and classes it uses, and its
# attributes (id and label name the letter: "cand-a", "Candidate A").
MARKUP = """() => [...document.querySelectorAll('.ab article.cand')].map(c => {
  const letter = c.querySelector('.ab-letter').textContent.trim();
  const attrs = [...c.attributes].map(a => a.name + '=' + a.value.replace(/(^|[- ])[ab]$/i, '$1?'));
  const parts = new Set([...c.querySelectorAll('*')].map(e => e.tagName + '.' + e.className));
  return {letter, attrs, parts: [...parts].sort(), title: c.querySelector('h4').textContent,
          text: c.innerText};
})"""
#: Words that would tell which side is the agent's.
GIVEAWAYS = ("actor", "twin", "repeat", "retry", "again", "original", "recorded", "guarded")


def repeat_trace(i: int) -> list[dict]:
    """TwinCheck's Fig. 5: a call fails, and the agent sends the identical call again."""
    b = Events(f"r{i}", tools=account_tools(), task={"id": f"r{i}", "category": "accounts"})
    b.user(f"Change the payment of acc_{i} to card_1")
    b.call("c1", "set_payment", key=f"acc_{i}", value="card_1")
    b.result("c1", status="error", content="payment method not found")
    b.call("c2", "set_payment", key=f"acc_{i}", value="card_1")
    b.result("c2", status="error", content="payment method not found")
    b.assistant("I could not change the payment method.")
    return b.events


@pytest.fixture
def queue(project, alice):  # type: ignore[no-untyped-def]
    ingest_bytes(project, jsonl([e for i in range(N) for e in repeat_trace(i)]), "r.jsonl")
    run = audit_run_create(
        project=project, enqueue=False, environment="none", policies=["twincheck"]
    )
    audit_run_start(run_id=run.pk, inline=True)
    run.refresh_from_db()
    q = queue_create(run=run, name="pairs", kinds=["pair"], k=2, user=alice)
    assert q.items.filter(kind="pair").count() == N
    return q


def test_pairs_are_blind_random_and_stable(
    page, live_server, project, django_user_model, queue, tmp_path
):
    errors = watch(page)
    member(django_user_model, project, "bob", Membership.Role.ANNOTATOR)
    login(page, live_server, "bob", "bob-pw")
    # before any claim, the trace page of a pair bob may be given hides its decisions
    trace_id = AnnotationItem.objects.filter(queue=queue).first().result.trace_id
    page.goto(f"{live_server.url}/traces/{trace_id}/")
    assert page.locator("#decisions-hidden").is_visible()
    assert page.locator("#audit .policy-tab").count() == 0
    # and its timeline, which holds the agent's call
    assert page.locator("#timeline-hidden").is_visible()
    assert page.locator("#timeline li.ev").count() == 0

    url = f"{live_server.url}/queues/{queue.pk}/annotate/"
    page.goto(url)
    actor_first = []
    shown = []
    for n in range(N):
        pk = item_id(page)
        shown.append(pk)
        item = AnnotationItem.objects.get(pk=pk)
        cands = page.evaluate(MARKUP)
        assert [c["letter"] for c in cands] == ["A", "B"]
        a, b = cands
        # the same markup and wording; only the content differs
        assert a["attrs"] == b["attrs"] and a["parts"] == b["parts"], (a, b)
        assert {a["title"].split()[0], b["title"].split()[0]} == {"A", "B"}
        # the context shows the failed call and its error, and names no side
        panel = page.inner_text("section.item").lower()
        assert "payment method not found" in panel
        assert [w for w in GIVEAWAYS if w in panel] == [], panel
        # the agent's call is the repeat: which letter holds it is the logged order
        repeat_letter = "A" if "value" in a["text"] else "B"
        assert (repeat_letter == "A") == (list(item.claim_order)[0] == "actor")
        actor_first.append(repeat_letter == "A")
        if n == 0:
            # a reload shows the same item in the same order
            page.reload()
            assert item_id(page) == pk and page.evaluate(MARKUP) == cands
            for theme in ("light", "dark"):
                page.select_option("#theme-select", theme)
                for width in (1440, 390):
                    page.set_viewport_size({"width": width, "height": 900})
                    if width == 390:
                        assert page.evaluate(WIDE) == []
                    shot(page, tmp_path, f"annotate-blind-pair-{theme}-{width}.png")
            page.set_viewport_size({"width": 1280, "height": 900})
            page.select_option("#theme-select", "light")
        press_and_wait(page, ["a", "Enter"])
    # each item in bob's own keyed order (random across items: a keyed hash of item and
    # annotator; that both orders occur is tested over many items in test_services, as 8
    # items all in one order would happen once in 128 runs)
    bob = django_user_model.objects.get(username="bob")
    assert actor_first == [blind_order(item_id=pk, user_id=bob.pk)[0] == "actor" for pk in shown], (
        actor_first
    )
    assert errors == [], errors
