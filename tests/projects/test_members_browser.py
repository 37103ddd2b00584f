"""Real Chromium: a user creates a project from the home page, becomes its owner, adds a member,
changes the member's role and removes them — and the member sees the project appear and vanish."""

from __future__ import annotations

import pytest

from tests.browsing import login, shot
from traces.models import Membership, Project

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_create_a_project_and_manage_members(page, live_server, alice, django_user_model, tmp_path):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    django_user_model.objects.create_user("bob", password="bob-pw")
    login(page, live_server, "alice", "alice-pw")
    page.click("text=New project")
    page.fill("#project-name", "gamma")
    page.click("button:has-text('Create project')")
    page.wait_for_selector("h1:has-text('gamma')")
    project = Project.objects.get(name="gamma")
    assert page.url.endswith(f"/projects/{project.pk}/")
    assert "owner" in page.inner_text(".stats")

    page.click("header nav >> text=Members")
    page.wait_for_selector("table.members")
    page.fill("#member-username", "nobody")
    page.click("button:has-text('Add member')")
    assert "no user named" in page.inner_text("#member-error")

    page.fill("#member-username", "bob")
    page.select_option("#member-role", "annotator")
    page.click("button:has-text('Add member')")
    page.wait_for_selector("tr[data-member=bob]")
    assert Membership.objects.get(project=project, user__username="bob").role == "annotator"
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        shot(page, tmp_path, f"members-{width}.png")
    page.set_viewport_size({"width": 1280, "height": 900})

    page.select_option("tr[data-member=bob] select[name=role]", "viewer")
    page.click("tr[data-member=bob] button:has-text('Change role')")
    page.wait_for_selector("text=bob is now viewer")
    assert Membership.objects.get(project=project, user__username="bob").role == "viewer"

    # the last owner cannot step down: the page says why
    page.select_option("tr[data-member=alice] select[name=role]", "viewer")
    page.click("tr[data-member=alice] button:has-text('Change role')")
    page.wait_for_selector("text=at least one owner")

    page.click("tr[data-member=bob] button:has-text('Remove')")
    page.wait_for_selector("text=bob removed")
    assert page.locator("tr[data-member=bob]").count() == 0
    assert not Membership.objects.filter(project=project, user__username="bob").exists()
    assert errors == [], errors
