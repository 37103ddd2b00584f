"""The per-project switch that executes code candidates (issue 13 §2): off by default, shown on
the project page with its warning, switched only by an owner, bad input a clear 400."""

from __future__ import annotations

import pytest
from django.urls import reverse

from traces.models import Membership

pytestmark = pytest.mark.django_db


def test_off_by_default_with_a_warning_on_the_project_page(client, alice, project):
    assert project.execute_code_candidates is False
    client.force_login(alice)
    body = client.get(reverse("auditor:project", args=[project.pk])).content.decode()
    assert "this executes uploaded code" in body and 'data-execute="off"' in body


def test_only_an_owner_switches_it(client, alice, django_user_model, project):
    bob = django_user_model.objects.create_user("bob", password="bob-pw")
    Membership.objects.create(project=project, user=bob, role=Membership.Role.ANNOTATOR)
    url = reverse("traces:project-sandbox", args=[project.pk])
    client.force_login(bob)
    assert client.post(url, {"execute_code_candidates": "on"}).status_code == 403
    body = client.get(reverse("auditor:project", args=[project.pk])).content.decode()
    assert "data-execute=" not in body  # no switch for non-owners
    project.refresh_from_db()
    assert project.execute_code_candidates is False

    client.force_login(alice)
    r = client.post(url, {"execute_code_candidates": "maybe"})
    assert r.status_code == 400 and b"'on' or 'off'" in r.content
    assert client.post(url, {"execute_code_candidates": "on"}).status_code == 302
    project.refresh_from_db()
    assert project.execute_code_candidates is True
    body = client.get(reverse("auditor:project", args=[project.pk])).content.decode()
    assert 'data-execute="on"' in body and "Switch off" in body
    assert client.get(url).status_code == 405  # a switch is a POST


def test_outsiders_do_not_see_the_project(client, charlie, project):
    client.force_login(charlie)
    url = reverse("traces:project-sandbox", args=[project.pk])
    assert client.post(url, {"execute_code_candidates": "on"}).status_code == 404
