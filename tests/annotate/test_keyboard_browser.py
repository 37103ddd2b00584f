"""Real Chromium annotates three items with the keyboard only and sees the agreement numbers
update after each verdict (Krippendorff's α and Cohen's κ, checked against hand values)."""

from __future__ import annotations

import pytest

from auditor.annotation.services import queue_create, verdict_submit
from auditor.models import AnnotationItem, AuditResult, Verdict
from tests.annotate.conftest import make_run, member
from tests.browsing import item_id, login, press_and_wait, shot
from traces.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_keyboard_only_annotation_updates_agreement(
    page, live_server, project, alice, django_user_model, tmp_path
):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    bob = member(django_user_model, project, "bob", Membership.Role.ANNOTATOR)
    run = make_run(project, examples=False, policies=["twincheck"])
    queue = queue_create(run=run, name="lock outcomes", kinds=["outcome"], k=2, user=alice)
    items = list(queue.items.order_by("id"))
    assert len(items) == 3
    for it, label in zip(items, ["success", "failure", "success"], strict=True):
        AnnotationItem.objects.filter(pk=it.pk).update(claimed_by=bob)
        verdict_submit(item_id=it.pk, user=bob, label=label)

    login(page, live_server, "alice", "alice-pw")
    page.goto(f"{live_server.url}/queues/{queue.pk}/annotate/")
    assert item_id(page) == str(items[0].pk)
    assert page.inner_text("#agreement-alpha") == "—"
    # the shortcuts are on the page, and ? opens the help
    assert "skip" in page.inner_text(".shortcuts")
    page.keyboard.press("?")
    page.wait_for_selector("#help[open]")
    page.keyboard.press("Escape")
    page.wait_for_selector("#help:not([open])", state="attached")

    # 1 = success, Enter submits; the next item arrives through htmx, agreement updates
    page.keyboard.press("1")
    assert page.is_checked("input[name=label][value=success]")
    shot(page, tmp_path, "annotate.png")
    press_and_wait(page, ["Enter"])
    assert item_id(page) == str(items[1].pk)
    # one unit, both "success": no disagreement possible, α = 1 (D_e = 0, D_o = 0)
    assert page.inner_text("#agreement-alpha") == "1.000"
    assert page.inner_text("#progress-mine") == "1"

    # a comment typed, left with Escape, then y (the alias of 1) and Enter
    page.keyboard.press("c")
    page.keyboard.type("looks locked")
    page.keyboard.press("Escape")
    press_and_wait(page, ["y", "Enter"])
    # units (s,s), (s,f): n_s = 3, n_f = 1, D_o = 2, D_e = 2·3·1/3 = 2 → α = 0
    assert page.inner_text("#agreement-alpha") == "0.000"

    press_and_wait(page, ["2", "Enter"])
    # units (s,s), (s,f), (f,s): n_s = 4, n_f = 2, D_o = 4, D_e = 2·4·2/5 = 3.2 → α = −0.25
    assert page.inner_text("#agreement-alpha") == "-0.250"
    # κ: alice s s f, bob s f s → p_o = 1/3, p_e = 5/9 → κ = −0.5
    assert page.inner_text("#agreement-kappa") == "-0.500"
    assert "Nothing left for you" in page.inner_text("#panel")
    shot(page, tmp_path, "annotate-done.png")

    verdicts = Verdict.objects.filter(annotator=alice).order_by("id")
    assert [v.label for v in verdicts] == ["success", "success", "failure"]
    assert verdicts[1].comment == "looks locked"
    # item 1: both said success → the result's transition flows back to rescue
    assert AuditResult.objects.get(pk=items[0].result_id).transition == "rescue"

    # u takes the last verdict back: its item returns and the numbers with it
    press_and_wait(page, ["u"])
    assert item_id(page) == str(items[2].pk)
    assert page.inner_text("#agreement-alpha") == "0.000"
    press_and_wait(page, ["1", "Enter"])  # now they agree: α over (s,s), (s,f), (s,s)
    assert page.inner_text("#agreement-alpha") == "0.000"
    assert errors == [], errors

    # the run's queues, then the queue page: progress, agreement, the disagreement
    page.goto(f"{live_server.url}/audits/{run.pk}/queues/")
    assert "lock outcomes" in page.inner_text("table.queues")
    shot(page, tmp_path, "annotate-queues.png")
    page.goto(f"{live_server.url}/queues/{queue.pk}/")
    assert page.inner_text("#progress-disagree") == "1"
    shot(page, tmp_path, "annotate-queue.png")
    page.click("#disagreements a.button")
    page.wait_for_selector("form.adjudicate")
    shot(page, tmp_path, "annotate-adjudicate.png")
    page.check("input[name=label][value=failure]")
    page.click("form.adjudicate button[type=submit]")
    page.wait_for_url(f"**/queues/{queue.pk}/")
    assert page.inner_text("#progress-disagree") == "0"
    assert errors == [], errors


def test_blind_pair_page_by_keyboard(page, live_server, project, alice, tmp_path):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    run = make_run(project, locks=2, examples=False, policies=["twincheck"])
    queue = queue_create(run=run, name="actor vs twin", kinds=["pair"], k=1, user=alice)
    login(page, live_server, "alice", "alice-pw")
    page.goto(f"{live_server.url}/queues/{queue.pk}/annotate/")
    first = AnnotationItem.objects.get(queue=queue, claimed_by=alice)
    order = first.claim_order
    page.keyboard.press("b")
    page.keyboard.press("f")
    assert page.is_checked("#fatal")
    shot(page, tmp_path, "annotate-pair.png")
    press_and_wait(page, ["Enter"])
    v = Verdict.objects.get(item=first)
    assert v.shown_label == "B" and v.label == order[1] and v.fatal is True
    assert v.display_order == order
    press_and_wait(page, ["s"])  # skip the second
    assert Verdict.objects.get(item__queue=queue, annotator=alice, skipped=True)
    assert "Nothing left for you" in page.inner_text("#panel")
    assert errors == [], errors
