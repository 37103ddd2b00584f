"""What the page benchmarks share: a bench database's site — Django set up on PostgreSQL,
migrated, a user who owns the bench's project — and a logged-in test client."""

from __future__ import annotations

import sys
from typing import Any


def bench_site(username: str, project_name: str) -> tuple[Any, Any, Any]:
    """(user, project, logged-in Client) in the database of DATABASE_URL, created if missing.
    Rows are added to that database: point it at a bench database, not at real data."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from traces.models import Membership, Project

    if connection.vendor != "postgresql":
        sys.exit("set DATABASE_URL=postgres://… (a bench database: rows are added to it)")
    settings.DEBUG = False  # no query log growing with every request
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username=username)
    project, _ = Project.objects.get_or_create(name=project_name)
    Membership.objects.get_or_create(project=project, user=user, defaults={"role": "owner"})
    client = Client()
    client.force_login(user)
    return user, project, client


def p95(ts: list[float]) -> float:
    """The 95th percentile of sorted times (nearest rank)."""
    return ts[min(len(ts) - 1, round(0.95 * (len(ts) - 1)))]
