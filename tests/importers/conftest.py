"""Importer tests need no Django: they run with `-p no:django` before settings exist."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _media_root():  # type: ignore[no-untyped-def]
    """Overrides tests/conftest.py's autouse fixture, which needs Django settings; importers
    store nothing, so there is no media folder to redirect."""
    yield None
