"""Data migration traces.0012_project_created_by: a project made before the field records its
first owner (the creator: traces.projects makes the project and that membership together) as
its creator, which decides whether code execution may be switched on."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.migrating import migrated_back

BEFORE = [("traces", "0011_token_scopes")]


def test_existing_projects_get_their_first_owner_as_creator(postgres, transactional_db):  # type: ignore[no-untyped-def]
    users = get_user_model().objects
    creator = users.create_user("creator", password="pw")
    later = users.create_user("later-owner", password="pw")
    viewer = users.create_user("viewer", password="pw")
    with migrated_back(BEFORE) as migration:
        apps = migration.apps
        Project = apps.get_model("traces", "Project")
        Membership = apps.get_model("traces", "Membership")
        owned = Project.objects.create(name="owned")
        Membership.objects.create(project=owned, user_id=viewer.pk, role="viewer")
        Membership.objects.create(project=owned, user_id=creator.pk, role="owner")
        Membership.objects.create(project=owned, user_id=later.pk, role="owner")
        orphan = Project.objects.create(name="no-owner")
        apps = migration.forward()
        Project = apps.get_model("traces", "Project")
        assert Project.objects.get(pk=owned.pk).created_by_id == creator.pk
        assert Project.objects.get(pk=orphan.pk).created_by_id is None


pytestmark = pytest.mark.django_db(transaction=True)
