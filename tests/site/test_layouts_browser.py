"""Real Chromium: the dashboard, the traces list and the upload page at 1440 and 390 px without
sideways scrolling, and dark mode from the system's prefers-color-scheme."""

from __future__ import annotations

import pytest

from tests.annotate.conftest import make_run
from tests.browsing import WIDE, login, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def no_sideways_scroll(page) -> None:  # type: ignore[no-untyped-def]
    fits = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert fits, page.evaluate(WIDE)


def test_pages_fit_390_px_and_follow_dark_mode(page, live_server, project, alice, tmp_path):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    run = make_run(project, locks=2, examples=True, policies=["twincheck", "checklist"])
    login(page, live_server, "alice", "alice-pw")
    dashboard = f"{live_server.url}/projects/{project.pk}/"
    upload = project.uploads.order_by("id").first()
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(dashboard)
        # the unknown outcomes of the run are called to attention, with its number
        assert f"in run #{run.pk}" in page.inner_text("#attention")
        no_sideways_scroll(page)
        shot(page, tmp_path, f"dashboard-{width}.png")
        for url in (f"/projects/{project.pk}/traces/", upload.get_absolute_url()):
            page.goto(f"{live_server.url}{url}")
            no_sideways_scroll(page)
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto(f"{live_server.url}/projects/{project.pk}/traces/")
    shot(page, tmp_path, "traces-390.png")

    light = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.emulate_media(color_scheme="dark")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(dashboard)
    dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
    card = page.evaluate("getComputedStyle(document.querySelector('table.grid')).backgroundColor")
    assert light == "rgb(246, 247, 249)" and dark == "rgb(15, 20, 27)", (light, dark)
    assert card == "rgb(23, 29, 38)"
    shot(page, tmp_path, "dashboard-dark.png")
    assert errors == [], errors
