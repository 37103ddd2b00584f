"""An owner creates a read-scoped token with an expiry on the project page and sees each
token's scope (upload only, read only, or write), expiry and last use."""

from __future__ import annotations

import os

import pytest

from tests.browsing import login
from tests.conftest import REPO
from traces.models import ProjectToken

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_owner_creates_a_scoped_token_and_sees_its_details(
    page, live_server, project, alice, tmp_path
):
    ProjectToken.issue(project=project, name="ci-uploader")
    login(page, live_server, "alice", "alice-pw")
    page.goto(f"{live_server.url}{project.get_absolute_url()}")
    page.fill("#token-name", "dashboard-reader")
    page.select_option("#token-scope", "read")
    page.fill("#token-expiry", "30")
    page.click("form:has(#token-name) button[type=submit]")
    page.wait_for_selector("#new-token")
    tokens = page.inner_text("ul.tokens")
    assert "dashboard-reader" in tokens and "read only" in tokens
    assert "ci-uploader" in tokens and "upload only" in tokens
    assert "never used" in tokens and "expires " in tokens and "never expires" in tokens
    t = ProjectToken.objects.get(name="dashboard-reader")
    assert t.scope == "read" and t.expires_at is not None
    shots = (
        REPO / "docs" / "screenshots" if os.environ.get("TA_DOCS_SCREENSHOTS") == "1" else tmp_path
    )
    page.locator("h2:has-text('Upload tokens')").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "project-tokens.png"), full_page=True)
