"""A verdict names its item: the item must be of the queue in the URL, whose project's role the
page checked. Otherwise a claim held in a project the user has left could be answered through
a queue of another project where the user still annotates."""

from __future__ import annotations

import pytest
from django.urls import reverse

from auditor.annotation.services import item_claim, queue_create
from auditor.models import Verdict
from tests.annotate.conftest import make_run
from traces.models import Membership, Project

pytestmark = pytest.mark.django_db


def test_verdict_through_another_projects_queue_is_refused_after_losing_the_role(
    client, project, alice, bob
):
    beta = Project.objects.create(name="beta")
    Membership.objects.create(project=beta, user=alice, role=Membership.Role.OWNER)
    Membership.objects.create(project=beta, user=bob, role=Membership.Role.ANNOTATOR)
    q_alpha = queue_create(run=make_run(project), name="alpha q", user=alice)
    q_beta = queue_create(run=make_run(beta), name="beta q", user=alice)
    held = item_claim(queue=q_alpha, user=bob)
    assert held is not None
    Membership.objects.filter(project=project, user=bob).delete()  # bob leaves alpha

    client.force_login(bob)
    label = "success" if held.kind == "outcome" else "A"
    r = client.post(reverse("annotate:next", args=[q_beta.pk]), {"item": held.pk, "label": label})
    assert r.status_code in (200, 400)
    assert not Verdict.objects.filter(item=held).exists()
    assert b"no such item in this queue" in r.content
    # And through alpha's own URL he is now an outsider.
    r = client.post(reverse("annotate:next", args=[q_alpha.pk]), {"item": held.pk, "label": label})
    assert r.status_code == 404
    assert not Verdict.objects.filter(item=held).exists()
