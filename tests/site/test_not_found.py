"""A missing page is a plain 404 (templates/404.html), never Django's debug page listing every
URL of the app; scripts/run serves with DEBUG off and documents PORT."""

from __future__ import annotations

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.django_db


def test_a_missing_page_is_plain(client, alice, settings):
    settings.DEBUG = False
    client.force_login(alice)
    r = client.get("/no/such/page/")
    body = r.content.decode()
    assert r.status_code == 404
    assert "Not found" in body and "URLconf" not in body and "admin/" not in body
    # another project's id gets the same page: nothing tells it exists
    assert client.get("/projects/999999/").content.decode() == body


def test_run_script_keeps_debug_off_and_stops_process_groups():
    script = (REPO / "scripts" / "run").read_text()
    assert 'DJANGO_DEBUG="${DJANGO_DEBUG:-0}"' in script
    assert "set -m" in script and 'kill -KILL -- "-$pid"' in script
    assert "PORT" in (REPO / "README.md").read_text()
