"""Projects and members in the app: the creator becomes the owner, owners add, re-role and remove
members, a project always keeps an owner, and bad input gets a clear error, never a 500."""

from __future__ import annotations

import pytest
from django.test import Client

from traces.models import Membership, Project
from traces.projects import MembershipRejected, member_remove, member_set_role, project_create

pytestmark = pytest.mark.django_db


def _client(user) -> Client:  # type: ignore[no-untyped-def]
    c = Client()
    c.force_login(user)
    return c


def test_a_new_project_belongs_to_its_creator(alice):
    c = _client(alice)
    r = c.post("/projects/new/", {"name": "  gamma  "})
    project = Project.objects.get(name="gamma")
    assert r.status_code == 302 and r["Location"] == f"/projects/{project.pk}/"
    assert Membership.objects.get(project=project, user=alice).role == "owner"
    # visible to its creator at once: the dashboard and the members page
    assert c.get(f"/projects/{project.pk}/").status_code == 200
    assert "alice" in c.get(f"/projects/{project.pk}/members/").content.decode()


@pytest.mark.parametrize(
    ("name", "message"),
    [("", "needs a name"), ("x" * 101, "at most 100"), ("alpha", "is taken")],
)
def test_a_bad_project_name_is_refused_clearly(alice, project, name, message):
    r = _client(alice).post("/projects/new/", {"name": name})
    assert r.status_code == 400
    assert message in r.content.decode()
    assert Project.objects.count() == 1


def test_owner_adds_changes_and_removes_a_member(alice, project, django_user_model):
    bob = django_user_model.objects.create_user("bob", password="pw")
    c = _client(alice)
    r = c.post(f"/projects/{project.pk}/members/", {"username": "bob", "role": "annotator"})
    assert r.status_code == 302
    m = Membership.objects.get(project=project, user=bob)
    assert m.role == "annotator"
    # bob now sees the project; as an annotator he cannot manage members
    bc = _client(bob)
    assert bc.get(f"/projects/{project.pk}/").status_code == 200
    assert (
        bc.post(f"/projects/{project.pk}/members/{m.pk}/role/", {"role": "owner"}).status_code
        == 403
    )
    c.post(f"/projects/{project.pk}/members/{m.pk}/role/", {"role": "viewer"})
    assert Membership.objects.get(pk=m.pk).role == "viewer"
    c.post(f"/projects/{project.pk}/members/{m.pk}/remove/")
    assert not Membership.objects.filter(pk=m.pk).exists()
    assert bc.get(f"/projects/{project.pk}/").status_code == 404


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"username": "nobody", "role": "viewer"}, "no user named"),
        ({"username": "alice", "role": "viewer"}, "already a member"),
        ({"username": "bob", "role": "admin"}, "unknown role"),
        ({"username": "", "role": "viewer"}, "name the user"),
    ],
)
def test_a_bad_member_add_is_refused_clearly(alice, project, django_user_model, data, message):
    django_user_model.objects.create_user("bob", password="pw")
    r = _client(alice).post(f"/projects/{project.pk}/members/", data)
    assert r.status_code == 400
    assert message in r.content.decode()
    assert Membership.objects.filter(project=project).count() == 1


def test_the_last_owner_stays(alice, project, django_user_model):
    own = Membership.objects.get(project=project, user=alice)
    with pytest.raises(MembershipRejected, match="at least one owner"):
        member_set_role(membership=own, role="viewer")
    with pytest.raises(MembershipRejected, match="last owner"):
        member_remove(membership=own)
    # through the page: refused with the reason, nothing changed
    c = _client(alice)
    r = c.post(f"/projects/{project.pk}/members/{own.pk}/role/", {"role": "viewer"}, follow=True)
    assert "at least one owner" in r.content.decode()
    assert Membership.objects.get(pk=own.pk).role == "owner"
    # with a second owner, the first may step down
    bob = django_user_model.objects.create_user("bob", password="pw")
    Membership.objects.create(project=project, user=bob, role="owner")
    member_set_role(membership=own, role="viewer")
    assert Membership.objects.get(pk=own.pk).role == "viewer"


def test_a_member_of_another_project_is_not_reachable(alice, project, charlie):
    other = project_create(name="beta", user=charlie)
    theirs = Membership.objects.get(project=other, user=charlie)
    c = _client(alice)
    # alice owns alpha, but the membership id belongs to beta: 404, not a cross-project change
    assert c.post(f"/projects/{project.pk}/members/{theirs.pk}/remove/").status_code == 404
    assert Membership.objects.filter(pk=theirs.pk).exists()
