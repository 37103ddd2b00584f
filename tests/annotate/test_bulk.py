"""Checked rows of the traces list into an annotation queue: a new queue holds only the chosen
traces' items, an existing queue gains them once, and only owners may do it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from auditor.annotation.services import queue_create
from auditor.models import AnnotationItem, AnnotationQueue

pytestmark = pytest.mark.django_db


def _post(client, run, **data):  # type: ignore[no-untyped-def]
    return client.post(reverse("annotate:add-traces", args=[run.pk]), data)


def test_owner_adds_checked_traces_to_a_new_queue(client, alice, run):
    locks = list(run.project.traces.filter(external_id__startswith="lock-").order_by("id"))
    chosen = [locks[0].pk, locks[2].pk]
    client.force_login(alice)
    listing = client.get(reverse("auditor:trace-list", args=[run.project_id])).content.decode()
    assert 'form="bulk-queue"' in listing and 'id="bulk-add"' in listing
    r = _post(client, run, trace=[str(t) for t in chosen], queue="new", name="two locks")
    queue = AnnotationQueue.objects.get(name="two locks")
    assert r.status_code == 302 and r["Location"] == queue.get_absolute_url()
    traces = set(
        AnnotationItem.objects.filter(queue=queue).values_list("result__trace_id", flat=True)
    )
    assert traces == set(chosen)
    n = queue.items.count()
    assert n >= 2  # each lock trace: its unknown outcome and its pair at least
    # again, into the same queue: nothing twice; a third trace adds its own
    _post(client, run, trace=[str(t) for t in chosen], queue=str(queue.pk))
    assert queue.items.count() == n
    _post(client, run, trace=[str(locks[1].pk)], queue=str(queue.pk))
    assert queue.items.count() > n


def test_existing_queue_and_bad_input(client, alice, run):
    existing = queue_create(run=run, name="pairs", kinds=["pair"], k=1, user=alice)
    before = existing.items.count()
    client.force_login(alice)
    r = _post(client, run, queue=str(existing.pk))  # nothing checked
    assert r.status_code == 302 and existing.items.count() == before
    assert _post(client, run, trace=["1"], queue="999999").status_code == 404


def test_only_owners_add_and_outsiders_see_nothing(client, run, bob, charlie):
    t = run.project.traces.first()
    client.force_login(bob)  # an annotator
    assert _post(client, run, trace=[str(t.pk)], queue="new").status_code == 403
    page = client.get(reverse("auditor:trace-list", args=[run.project_id])).content.decode()
    assert 'id="bulk-queue"' not in page
    client.force_login(charlie)
    assert _post(client, run, trace=[str(t.pk)], queue="new").status_code == 404
    assert not AnnotationQueue.objects.exists()
