"""Annotation pages and htmx fragments, and who may do what: members see queues, owners and
annotators annotate, owners create, configure and adjudicate; outsiders get 404."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from auditor.annotation.schema import schema_for
from auditor.annotation.services import queue_create, verdict_submit
from auditor.models import AnnotationItem, AnnotationQueue, AuditResult, Verdict

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def queue(run, alice):  # type: ignore[no-untyped-def]
    return queue_create(run=run, name="round 1", user=alice)


def login(client, user):  # type: ignore[no-untyped-def]
    client.force_login(user)
    return client


def test_outsider_gets_404_everywhere(client, charlie, queue):
    login(client, charlie)
    item = queue.items.first()
    for url in (
        reverse("annotate:queue-list", args=[queue.run_id]),
        reverse("annotate:queue", args=[queue.pk]),
        reverse("annotate:next", args=[queue.pk]),
        reverse("annotate:adjudicate", args=[queue.pk, item.pk]),
    ):
        assert client.get(url).status_code == 404, url
    for url in (
        reverse("annotate:queue-list", args=[queue.run_id]),
        reverse("annotate:settings", args=[queue.pk]),
        reverse("annotate:next", args=[queue.pk]),
        reverse("annotate:undo", args=[queue.pk]),
    ):
        assert client.post(url, {"name": "x", "item": item.pk}).status_code == 404, url


def test_anonymous_is_sent_to_login(client, queue):
    r = client.get(reverse("annotate:next", args=[queue.pk]))
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]


def test_viewer_sees_queues_but_cannot_annotate(client, vera, queue):
    login(client, vera)
    r = client.get(reverse("annotate:queue-list", args=[queue.run_id]))
    assert r.status_code == 200 and b"round 1" in r.content
    assert b"New queue" not in r.content and b">Annotate<" not in r.content
    r = client.get(reverse("annotate:queue", args=[queue.pk]))
    assert r.status_code == 200 and b'id="agreement-alpha"' in r.content
    assert b'id="settings"' not in r.content and b'id="disagreements"' not in r.content
    assert client.get(reverse("annotate:next", args=[queue.pk])).status_code == 403
    item = queue.items.first()
    r = client.post(reverse("annotate:next", args=[queue.pk]), {"item": item.pk, "label": "A"})
    assert r.status_code == 403
    assert client.post(reverse("annotate:undo", args=[queue.pk])).status_code == 403
    assert client.get(reverse("annotate:adjudicate", args=[queue.pk, item.pk])).status_code == 403
    r = client.post(reverse("annotate:queue-list", args=[queue.run_id]), {"name": "mine"})
    assert r.status_code == 403
    assert client.post(reverse("annotate:settings", args=[queue.pk]), {"k": 5}).status_code == 403
    assert not Verdict.objects.exists()


def test_annotator_annotates_but_does_not_adjudicate(client, bob, queue):
    login(client, bob)
    assert client.get(reverse("annotate:next", args=[queue.pk])).status_code == 200
    item = queue.items.first()
    assert client.get(reverse("annotate:adjudicate", args=[queue.pk, item.pk])).status_code == 403
    r = client.post(reverse("annotate:queue-list", args=[queue.run_id]), {"name": "mine"})
    assert r.status_code == 403


def test_owner_creates_a_queue(client, alice, run):
    login(client, alice)
    url = reverse("annotate:queue-list", args=[run.pk])
    r = client.get(url)
    assert r.status_code == 200 and b"New queue" in r.content
    r = client.post(
        url,
        {
            "name": "pairs only",
            "kinds": ["pair"],
            "source": "needs",
            "k": "3",
            "lease_seconds": "300",
        },
    )
    queue = AnnotationQueue.objects.get(name="pairs only")
    assert r.status_code == 302 and r["Location"] == queue.get_absolute_url()
    assert (queue.k, queue.lease_seconds, queue.kinds) == (3, 300, ["pair"])
    assert queue.items.count() == 3
    r = client.post(
        url,
        {
            "name": "filtered",
            "kinds": ["outcome"],
            "source": "filter",
            "policy": "twincheck",
            "transition": "unknown",
            "k": "2",
        },
    )
    queue = AnnotationQueue.objects.get(name="filtered")
    assert queue.result_filter == {"policy": "twincheck", "transition": "unknown"}
    r = client.post(url, {"name": "bad", "kinds": ["nope"]})
    assert r.status_code == 400 and b"choose at least one item kind" in r.content
    r = client.get(url)
    assert b"pairs only" in r.content and b"filtered" in r.content


def test_queue_page_and_its_fragment(client, alice, bob, queue):
    pair = queue.items.filter(kind="pair").first()
    for user, label in ((alice, "A"), (bob, "B")):
        AnnotationItem.objects.filter(pk=pair.pk).update(
            claimed_by=user, claim_order=["actor", "twin"]
        )
        verdict_submit(item_id=pair.pk, user=user, label=label)
    login(client, alice)
    url = reverse("annotate:queue", args=[queue.pk])
    r = client.get(url)
    html = r.content.decode()
    assert r.status_code == 200 and "<html" in html
    assert f'hx-get="{url}"' in html  # the polling fragment's URL is the page's
    assert (
        'id="disagreements"' in html
        and reverse("annotate:adjudicate", args=[queue.pk, pair.pk]) in html
    )
    assert "alice: actor" in html and "bob: twin" in html
    assert 'id="settings"' in html and "&quot;question&quot;" in html
    r = client.get(url, **HX)
    frag = r.content.decode()
    assert r.status_code == 200 and "<html" not in frag
    assert frag.lstrip().startswith('<div id="stats"') and 'id="agreement-alpha"' in frag
    assert "HX-Request" in r["Vary"]


def test_queue_settings(client, alice, queue):
    login(client, alice)
    url = reverse("annotate:settings", args=[queue.pk])
    schema = {"pair": {"rubric": "Prefer the call that does what was asked."}}
    r = client.post(url, {"k": "3", "schema": json.dumps(schema)})
    assert r.status_code == 302
    queue.refresh_from_db()
    assert queue.k == 3 and queue.schema == schema
    r = client.post(url, {"k": "2", "schema": "{not json"}, follow=True)
    assert b"Settings not saved" in r.content
    queue.refresh_from_db()
    assert queue.k == 3


def test_annotation_page_shows_the_item_and_shortcuts(client, alice, queue):
    login(client, alice)
    url = reverse("annotate:next", args=[queue.pk])
    r = client.get(url)
    html = r.content.decode()
    item = AnnotationItem.objects.get(queue=queue, claimed_by=alice)
    assert r.status_code == 200
    assert f'name="item" value="{item.pk}"' in html
    assert schema_for(queue, item.kind)["question"] in html
    for key in ("<kbd>Enter</kbd>", "<kbd>s</kbd>", "<kbd>u</kbd>", "<kbd>?</kbd>"):
        assert key in html
    assert f'hx-post="{url}"' in html and f'action="{url}"' in html
    assert "js/annotate.js" in html and "<script>" not in html and " onclick" not in html
    # a reload shows the same item: the claim is the user's until the lease ends
    assert client.get(url).content.decode().count(f'name="item" value="{item.pk}"') == 2


def test_pair_page_is_blind(client, alice, queue):
    login(client, alice)
    AnnotationItem.objects.exclude(kind="pair").delete()
    html = client.get(reverse("annotate:next", args=[queue.pk])).content.decode()
    assert 'id="cand-a"' in html and 'id="cand-b"' in html
    assert "unlock_account" in html and "The requested operation is complete." in html
    assert "cand-actor" not in html and "cand-twin" not in html
    assert "inverse_action" not in html  # the certificate would give the twin away
    trace_url = reverse("auditor:trace", args=[queue.items.first().result.trace_id])
    assert trace_url not in html  # nor would the trace page


def test_submit_with_htmx_returns_the_next_item(client, alice, queue):
    login(client, alice)
    url = reverse("annotate:next", args=[queue.pk])
    client.get(url)
    first = AnnotationItem.objects.get(queue=queue, claimed_by=alice)
    label = schema_for(queue, first.kind)["labels"][0]["value"]
    r = client.post(url, {"item": first.pk, "label": label, "comment": "<b>hm</b>"}, **HX)
    frag = r.content.decode()
    assert r.status_code == 200 and "<html" not in frag
    assert frag.lstrip().startswith('<div id="panel"')
    v = Verdict.objects.get(item=first, annotator=alice)
    assert v.comment == "<b>hm</b>" and "<b>hm</b>" not in frag
    nxt = AnnotationItem.objects.get(queue=queue, claimed_by=alice)
    assert nxt.pk != first.pk and f'name="item" value="{nxt.pk}"' in frag
    assert 'id="undo-button"' in frag
    assert 'id="progress-mine">1<' in frag


def test_submit_without_javascript_redirects(client, alice, queue):
    login(client, alice)
    url = reverse("annotate:next", args=[queue.pk])
    client.get(url)
    item = AnnotationItem.objects.get(queue=queue, claimed_by=alice)
    label = schema_for(queue, item.kind)["labels"][0]["value"]
    r = client.post(url, {"item": item.pk, "label": label})
    assert r.status_code == 302 and r["Location"] == url
    r = client.post(url, {"item": item.pk, "label": label})  # a second submit: refused
    assert r.status_code == 200 and b"not assigned to you" in r.content


def test_missing_label_is_an_error_not_a_verdict(client, alice, queue):
    login(client, alice)
    url = reverse("annotate:next", args=[queue.pk])
    client.get(url)
    item = AnnotationItem.objects.get(queue=queue, claimed_by=alice)
    r = client.post(url, {"item": item.pk}, **HX)
    assert b'id="annotate-error"' in r.content and b"choose one of" in r.content
    assert not Verdict.objects.exists()
    assert f'name="item" value="{item.pk}"'.encode() in r.content  # still the same item


def test_skip_and_undo(client, alice, queue):
    login(client, alice)
    url = reverse("annotate:next", args=[queue.pk])
    undo = reverse("annotate:undo", args=[queue.pk])
    r = client.post(undo, **HX)
    assert b"Nothing to undo" in r.content
    client.get(url)
    first = AnnotationItem.objects.get(queue=queue, claimed_by=alice)
    r = client.post(url, {"item": first.pk, "action": "skip"}, **HX)
    assert Verdict.objects.get(item=first, annotator=alice).skipped
    second = AnnotationItem.objects.get(queue=queue, claimed_by=alice)
    assert second.pk != first.pk
    label = schema_for(queue, second.kind)["labels"][0]["value"]
    client.post(url, {"item": second.pk, "label": label}, **HX)
    assert Verdict.objects.filter(annotator=alice).count() == 2
    # undo brings back the last verdict's item, then the skip's
    r = client.post(undo, **HX)
    assert f'name="item" value="{second.pk}"'.encode() in r.content
    assert not Verdict.objects.filter(item=second).exists()
    r = client.post(undo)
    assert r.status_code == 302 and r["Location"] == url
    assert not Verdict.objects.exists()
    assert AnnotationItem.objects.get(queue=queue, claimed_by=alice).pk == first.pk


def test_nothing_left(client, alice, run):
    queue = queue_create(run=run, name="empty", kinds=["feedback"])
    assert queue.items.count() == 0
    login(client, alice)
    r = client.get(reverse("annotate:next", args=[queue.pk]))
    assert r.status_code == 200 and b"Nothing left for you" in r.content


def test_adjudication_view(client, alice, bob, queue):
    item = queue.items.filter(kind="outcome", result__policy="twincheck").first()
    for user, label in ((alice, "success"), (bob, "failure")):
        AnnotationItem.objects.filter(pk=item.pk).update(claimed_by=user)
        verdict_submit(item_id=item.pk, user=user, label=label, comment=f"{user} thinks")
    login(client, alice)
    url = reverse("annotate:adjudicate", args=[queue.pk, item.pk])
    r = client.get(url)
    html = r.content.decode()
    assert r.status_code == 200 and "alice thinks" in html and "bob thinks" in html
    assert 'value="success"' in html and 'value="failure"' in html
    r = client.post(url, {"label": "bogus"})
    assert r.status_code == 400
    r = client.post(url, {"label": "success"})
    assert r.status_code == 302
    item.refresh_from_db()
    assert (item.status, item.final_label, item.final_source) == ("done", "success", "adjudication")
    assert AuditResult.objects.get(pk=item.result_id).transition == "rescue"
    other = AnnotationQueue.objects.create(run=queue.run, name="other", kinds=["pair"])
    r = client.get(reverse("annotate:adjudicate", args=[other.pk, item.pk]))
    assert r.status_code == 404  # the item belongs to another queue


def test_pair_adjudication_shows_who_is_who(client, alice, bob, queue):
    pair = queue.items.filter(kind="pair").first()
    for user, label in ((alice, "A"), (bob, "A")):
        AnnotationItem.objects.filter(pk=pair.pk).update(
            claimed_by=user, claim_order=["actor", "twin"] if user == alice else ["twin", "actor"]
        )
        verdict_submit(item_id=pair.pk, user=user, label=label)
    login(client, alice)
    html = client.get(reverse("annotate:adjudicate", args=[queue.pk, pair.pk])).content.decode()
    assert 'id="cand-actor"' in html and 'id="cand-twin"' in html
    assert "actor, twin" in html and "twin, actor" in html
