"""Data migration traces.0012_project_created_by: a project made before the field records its
first owner (the creator: traces.projects makes the project and that membership together) as
its creator, which decides whether code execution may be switched on."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("traces", "0011_token_scopes")]


def test_existing_projects_get_their_first_owner_as_creator(postgres, transactional_db):  # type: ignore[no-untyped-def]
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    users = get_user_model().objects
    creator = users.create_user("creator", password="pw")
    later = users.create_user("later-owner", password="pw")
    viewer = users.create_user("viewer", password="pw")
    try:
        executor.migrate(BEFORE)
        apps = executor.loader.project_state(BEFORE).apps
        Project = apps.get_model("traces", "Project")
        Membership = apps.get_model("traces", "Membership")
        owned = Project.objects.create(name="owned")
        Membership.objects.create(project=owned, user_id=viewer.pk, role="viewer")
        Membership.objects.create(project=owned, user_id=creator.pk, role="owner")
        Membership.objects.create(project=owned, user_id=later.pk, role="owner")
        orphan = Project.objects.create(name="no-owner")
        executor = MigrationExecutor(connection)
        executor.migrate(latest)
        apps = executor.loader.project_state(latest).apps
        Project = apps.get_model("traces", "Project")
        assert Project.objects.get(pk=owned.pk).created_by_id == creator.pk
        assert Project.objects.get(pk=orphan.pk).created_by_id is None
    finally:
        MigrationExecutor(connection).migrate(latest)


pytestmark = pytest.mark.django_db(transaction=True)
