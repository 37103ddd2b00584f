"""The policy library needs no Django, database or services (SPEC §2). The suite-wide
autouse ``_media_root`` fixture touches Django settings, so it is overridden here by name:
these tests run with or without pytest-django (``-p no:django``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _media_root() -> Iterator[None]:
    yield None
