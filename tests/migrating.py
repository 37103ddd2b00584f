"""Data-migration tests: the test database taken back to the state before a migration, rows
written with that state's models, then migrated forward; whatever happens, the database ends at
the latest migrations again (other tests need it there)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


class MigratedBack:
    """The models of the state the database was taken back to (``apps``), and the step forward
    to the latest migrations (``forward``, which returns the latest state's models)."""

    def __init__(self, apps: Any, latest: list[tuple[str, str]]) -> None:
        self.apps = apps
        self.latest = latest

    def forward(self) -> Any:
        executor = MigrationExecutor(connection)
        executor.migrate(self.latest)
        return executor.loader.project_state(self.latest).apps


@contextmanager
def migrated_back(before: list[tuple[str, str]]) -> Iterator[MigratedBack]:
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate(before)
        yield MigratedBack(executor.loader.project_state(before).apps, latest)
    finally:
        MigrationExecutor(connection).migrate(latest)
