"""Real Chromium, keyboard only: a pair item whose decision lies in the conversation's second
turn shows that turn's request (not only the task), the earlier turn folded away, and nothing an
annotator can read — page text, titles, labels, the agreement sidebar after a verdict — names
which side is the actor."""

from __future__ import annotations

import re

import pytest

from auditor.annotation.services import queue_create
from auditor.models import AnnotationItem, Verdict
from tests.annotate.conftest import ingest_bytes
from tests.browsing import login, press_and_wait, shot
from tests.builders.events import Events, account_tools
from tests.builders.v1 import jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIRST = "Who owns acc_2?"
LATEST = "Thanks. Now please lock account acc_1"
# Words that would unblind a pair; whole words, any case.
LEAK = re.compile(r"\b(actor|actors|twin|twins|twincheck)\b", re.IGNORECASE)


def two_turn_trace(i: int) -> list[dict]:  # type: ignore[type-arg]
    b = Events(
        f"two-{i}",
        tools=account_tools(),
        task={"id": f"two-{i}", "benchmark": "toy", "category": "accounts"},
        env={
            "name": "toy",
            "config": {"state": {"acc_1": {"owner": "ann"}}, "goal": {"locked:acc_1": True}},
        },
        outcome={"success": False},
    )
    b.user(FIRST, turn=0)
    b.call("c1", "get_account", key="acc_2")
    b.result("c1", content={"owner": "bob"})
    b.assistant("bob", turn=0)
    b.user(LATEST, turn=1)
    b.call("c2", "lock_account", key="acc_1", turn=1)
    b.result("c2", content={"locked": True}, turn=1)
    b.call("c3", "unlock_account", key="acc_1", turn=1)
    b.result("c3", content={"locked": False}, turn=1)
    b.assistant("Done.", turn=1)
    return b.events


def _visible_text(page) -> str:  # type: ignore[no-untyped-def]
    """Everything an annotator can read: rendered text, titles, aria labels, the page title."""
    return page.evaluate(
        """() => [document.title, document.body.innerText,
            ...[...document.querySelectorAll('[title],[aria-label],[placeholder],[alt]')]
               .flatMap(el => ['title','aria-label','placeholder','alt']
                 .map(a => el.getAttribute(a) || ''))].join('\\n')"""
    )


def test_keyboard_pair_with_latest_request_and_no_side_names(
    page, live_server, project, alice, tmp_path
):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    ingest_bytes(project, jsonl([e for i in range(2) for e in two_turn_trace(i)]), "two.jsonl")
    from tests.annotate.conftest import make_run

    run = make_run(project, locks=0, examples=False, policies=["twincheck"])
    queue = queue_create(run=run, name="second turn", kinds=["pair"], k=2, user=alice)
    assert queue.items.count() >= 2
    login(page, live_server, "alice", "alice-pw")
    page.goto(f"{live_server.url}/queues/{queue.pk}/annotate/")
    page.wait_for_selector("#latest-request")
    assert LATEST in page.inner_text("#latest-request")
    # the earlier turn is there but folded; the calls of this turn before the decision show
    assert not page.is_visible("#earlier ol.ctx")
    assert FIRST in (page.text_content("#earlier") or "")
    assert "lock_account" in page.inner_text("#panel")
    text = _visible_text(page)
    assert not LEAK.search(text), [
        text[max(0, m.start() - 80) : m.end() + 40] for m in LEAK.finditer(text)
    ]
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        shot(page, tmp_path, f"annotate-pair-{width}.png")
    page.set_viewport_size({"width": 1280, "height": 900})

    first = AnnotationItem.objects.get(queue=queue, claimed_by=alice)
    press_and_wait(page, ["a", "Enter"])  # keyboard only: A is better, submit
    v = Verdict.objects.get(item=first, annotator=alice)
    assert v.shown_label == "A" and v.label in ("actor", "twin")
    # after a verdict the sidebar must not give the side away either
    text = _visible_text(page)
    assert not LEAK.search(text), LEAK.findall(text)
    assert "per-label counts hidden" in page.inner_text("#agreement")
    page.keyboard.press("?")
    page.wait_for_selector("#help[open]")
    assert not LEAK.search(page.inner_text("#help"))
    assert errors == [], errors
