"""Helpers of the browser tests (real Chromium through Playwright; the `browser` and `page`
fixtures are in tests/conftest.py): log in, take a screenshot, collect console errors, press
keys and wait for the annotation panel's next item."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import REPO

# TA_DOCS_SCREENSHOTS=1 writes the screenshots to docs/screenshots (for the docs); otherwise
# TA_SCREENSHOT_DIR, when set, or the test's own temporary folder.
DOCS = REPO / "docs" / "screenshots"

# The innermost elements that stick out of the viewport (for the failure message).
WIDE = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
  .filter(e => ![...e.children].some(c => c.getBoundingClientRect().right > window.innerWidth + 1))
  .filter(e => { for (let a = e.parentElement; a; a = a.parentElement) {
      if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(a).overflowX)) return false; }
    return true; })
  .slice(0, 8)
  .map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"""


def shot(page, tmp_path: Path, name: str, until: str = "") -> None:  # type: ignore[no-untyped-def]
    """The whole page, or its top down to the end of the element ``until`` selects."""
    if os.environ.get("TA_DOCS_SCREENSHOTS") == "1":
        target = DOCS
    else:
        target = Path(os.environ.get("TA_SCREENSHOT_DIR") or tmp_path)
    clip = None
    if until:
        box = page.locator(until).bounding_box()
        scroll = page.evaluate("window.scrollY")
        width = page.evaluate("document.documentElement.clientWidth")
        clip = {"x": 0, "y": 0, "width": width, "height": box["y"] + scroll + box["height"] + 16}
    page.screenshot(path=str(target / name), full_page=True, clip=clip)


def login(page, live_server, username: str, password: str) -> None:  # type: ignore[no-untyped-def]
    """Log in through the form and wait until the page has left it."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def watch(page) -> list[str]:  # type: ignore[no-untyped-def]
    """The page's script errors, console errors and CSP violations, as they come."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: errors.append(msg.text)
        if msg.type == "error" or "Content Security Policy" in msg.text
        else None,
    )
    return errors


def item_id(page) -> str:  # type: ignore[no-untyped-def]
    return page.get_attribute("#panel", "data-item") or ""


def press_and_wait(page, keys: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Press ``keys`` on the annotation page and wait for the panel's next item."""
    before = item_id(page)
    for k in keys:
        page.keyboard.press(k)
    page.wait_for_function(
        "prev => document.getElementById('panel').dataset.item !== prev", arg=before
    )
