"""A member refused by their role gets a page that says why and whom to ask, inside the site's
layout — never a bare "403 Forbidden"; an outsider still gets 404 (ids cannot be probed)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.lists.conftest import make_upload
from traces.models import Membership, Project

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "method,path,said",
    [
        ("get", "/uploads/{u}/delete/", "Only the project&#x27;s owners change or delete uploads."),
        ("post", "/projects/{p}/members/", "Only owners manage members."),
        ("post", "/uploads/{u}/retry/", "Viewers cannot retry uploads."),
        ("get", "/projects/{p}/upload/", "You cannot upload to this project"),
    ],
)
def test_a_viewer_is_told_why(django_user_model, method, path, said):
    project = Project.objects.create(name="alpha")
    viewer = django_user_model.objects.create_user("vic", password="pw")
    Membership.objects.create(project=project, user=viewer, role="viewer")
    upload = make_upload(project)
    c = Client()
    c.force_login(viewer)
    r = getattr(c, method)(path.format(u=upload.pk, p=project.pk))
    body = r.content.decode()
    assert r.status_code == 403
    assert said in body, body[:2000]
    assert 'id="theme-select"' in body  # the site's own layout, with its navigation
    if "upload/" not in path:
        assert "Ask an owner for the role you need" in body
    outsider = django_user_model.objects.create_user("out", password="pw")
    c.force_login(outsider)
    assert getattr(c, method)(path.format(u=upload.pk, p=project.pk)).status_code == 404


def test_a_shared_link_opened_by_a_non_member_says_to_ask_for_membership(django_user_model):
    project = Project.objects.create(name="alpha")
    outsider = django_user_model.objects.create_user("out", password="pw")
    c = Client()
    link = f"/projects/{project.pk}/traces/?tag=flaky&cols=trace%2Cmodel"
    # signed out: the log-in page first, then the link
    r = c.get(link)
    assert r.status_code == 302 and r["Location"].startswith("/accounts/login/?next=")
    c.force_login(outsider)
    r = c.get(link)
    body = r.content.decode()
    assert r.status_code == 404 and "ask an owner of their project to add you" in body
