"""An annotator's inbox ("My queues" in the header), agreement kept from annotators while they
still have items, and the trace page's decisions hidden from whoever holds an item on it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from auditor.annotation.schema import schema_for
from auditor.annotation.services import item_claim, queue_create, verdict_submit
from auditor.models import AnnotationItem
from traces.models import Membership, Project

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue(run, alice):  # type: ignore[no-untyped-def]
    return queue_create(run=run, name="round 1", user=alice)


def _answer_all(queue, user) -> None:  # type: ignore[no-untyped-def]
    while (item := item_claim(queue=queue, user=user)) is not None:
        verdict_submit(
            item_id=item.pk, user=user, label=schema_for(queue, item.kind)["labels"][0]["value"]
        )


def test_inbox_lists_the_queues_with_items_left_and_links_the_next(client, bob, queue):
    Project.objects.create(name="elsewhere")  # not bob's: not listed
    client.force_login(bob)
    home = client.get(reverse("traces:home"), follow=True).content.decode()
    inbox_url = reverse("annotate:inbox")
    assert f'href="{inbox_url}" id="my-queues"' in home
    html = client.get(inbox_url).content.decode()
    left = AnnotationItem.objects.filter(queue=queue, status="open").count()
    assert f'data-queue="{queue.pk}"' in html and "round 1" in html and "elsewhere" not in html
    assert f"({left} left)" in html
    r = client.get(reverse("annotate:inbox-next"))
    assert r.status_code == 302 and r["Location"] == reverse("annotate:next", args=[queue.pk])


def test_inbox_when_nothing_is_left(client, bob, queue):
    _answer_all(queue, bob)
    client.force_login(bob)
    html = client.get(reverse("annotate:inbox")).content.decode()
    assert (
        'id="inbox-empty"' in html and "Finished for you" in html and 'id="inbox-next"' not in html
    )
    r = client.get(reverse("annotate:inbox-next"))
    assert r["Location"] == reverse("annotate:inbox")


def test_viewers_have_an_empty_inbox(client, vera, queue):
    client.force_login(vera)
    html = client.get(reverse("annotate:inbox")).content.decode()
    assert 'id="inbox-empty"' in html and "round 1" not in html


def test_agreement_is_hidden_from_annotators_until_they_are_done(client, alice, bob, queue):
    client.force_login(bob)
    for url in (reverse("annotate:next", args=[queue.pk]), queue.get_absolute_url()):
        html = client.get(url).content.decode()
        assert 'id="agreement-hidden"' in html and 'id="agreement-alpha"' not in html
    client.force_login(alice)  # owners see it while annotating
    html = client.get(reverse("annotate:next", args=[queue.pk])).content.decode()
    assert 'id="agreement-alpha"' in html
    # another annotator's claim only delays an item: release alice's so bob can finish
    AnnotationItem.objects.filter(claimed_by=alice).update(claimed_by=None, lease_until=None)
    _answer_all(queue, bob)
    client.force_login(bob)
    html = client.get(queue.get_absolute_url()).content.decode()
    assert 'id="agreement-alpha"' in html and 'id="agreement-hidden"' not in html


def test_the_trace_page_hides_decisions_of_an_item_one_may_judge(
    client, alice, bob, carol, vera, queue
):
    AnnotationItem.objects.exclude(kind="pair").delete()
    client.force_login(bob)
    client.get(reverse("annotate:next", args=[queue.pk]))
    item = AnnotationItem.objects.get(queue=queue, claimed_by=bob)
    url = reverse("auditor:trace", args=[item.result.trace_id])
    html = client.get(url).content.decode()
    assert 'id="decisions-hidden"' in html and f"item #{item.pk}" in html
    assert "twincheck" not in html.split('id="audit"')[1].split("</section>")[0].lower()
    # a pair: the recorded timeline holds the agent's call, so it is kept back too
    call = item.payload["call"]["name"]
    assert 'id="timeline-hidden"' in html and call not in html.split('id="timeline"')[1]
    events = reverse("auditor:trace-events", args=[item.result.trace_id])
    one = reverse("auditor:trace-event", args=[item.result.trace_id, 1])
    assert client.get(events, HTTP_HX_REQUEST="true").status_code == 403
    assert client.get(one).status_code == 403
    assert client.get(url, HTTP_HX_REQUEST="true").content.decode().count("decisions-hidden") == 1
    # another annotator who may still be given the item is kept out too, before any claim
    client.force_login(carol)
    assert 'id="decisions-hidden"' in client.get(url).content.decode()
    client.force_login(vera)  # a viewer gives no verdicts: nothing to keep blind
    assert 'id="decisions-hidden"' not in client.get(url).content.decode()
    client.force_login(bob)
    verdict_submit(item_id=item.pk, user=bob, label="A")
    # the trace's other pair items (other calls of it) settled without bob
    AnnotationItem.objects.filter(result__trace_id=item.result.trace_id).exclude(pk=item.pk).update(
        status="done"
    )
    html = client.get(url).content.decode()
    assert 'id="decisions-hidden"' not in html and 'id="timeline-hidden"' not in html
    assert client.get(one).status_code == 200
    # an owner holding the item still sees them (owners adjudicate and see who chose what)
    assert item_claim(queue=queue, user=alice).pk == item.pk
    client.force_login(alice)
    assert 'id="decisions-hidden"' not in client.get(url).content.decode()


def test_the_inbox_covers_several_projects(client, bob, queue, alice):
    beta = Project.objects.create(name="beta")
    Membership.objects.create(project=beta, user=bob, role="viewer")
    client.force_login(bob)
    html = client.get(reverse("annotate:inbox")).content.decode()
    assert html.count('class="inbox-row"') == 1  # a viewer's project adds nothing


def test_the_inbox_counts_only_items_one_can_take_next(client, alice, bob, carol, queue):
    """An item someone else holds is not "left for you" until its claim lapses."""
    open_items = AnnotationItem.objects.filter(queue=queue, status="open").count()
    held = item_claim(queue=queue, user=carol)
    assert held is not None
    client.force_login(bob)
    html = client.get(reverse("annotate:inbox")).content.decode()
    assert f"({open_items - 1} left)" in html
    taken = []
    while (item := item_claim(queue=queue, user=bob)) is not None:
        taken.append(item.pk)
        verdict_submit(
            item_id=item.pk, user=bob, label=schema_for(queue, item.kind)["labels"][0]["value"]
        )
    assert len(taken) == open_items - 1 and held.pk not in taken
