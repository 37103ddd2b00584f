"""Helpers of the browser tests (real Chromium through Playwright; the `browser` and `page`
fixtures are in tests/conftest.py): log in, take a screenshot, collect console errors, press
keys, wait for the annotation panel's next item, and compute WCAG contrast."""

from __future__ import annotations

import os
import re
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


def shot(page, tmp_path: Path, name: str, until: str = "", *, full_page: bool = True) -> None:  # type: ignore[no-untyped-def]
    """The whole page (or the viewport when not ``full_page``), or its top down to the end of
    the element ``until`` selects."""
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
    page.screenshot(path=str(target / name), full_page=full_page or bool(until), clip=clip)


def login(page, live_server, username: str, password: str) -> None:  # type: ignore[no-untyped-def]
    """Log in through the form and wait until the page has left it.

    The browser first leaves the page it is on: a request that page still has in flight (a
    filter form sends one on "change" and one on "submit") could otherwise answer after the
    login form was served and set a new CSRF cookie, so the form's token would no longer match.
    """
    page.goto("about:blank")
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


def luminance(rgb: str) -> float:
    """WCAG relative luminance of a CSS colour "rgb(r, g, b)" (or "rgba(…)", alpha ignored)
    or "#rrggbb"."""
    if rgb.startswith("#"):
        r, g, b = (int(rgb[i : i + 2], 16) / 255 for i in (1, 3, 5))
    else:
        r, g, b = (float(x) / 255 for x in re.findall(r"[\d.]+", rgb)[:3])

    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)


def contrast(fg: str, bg: str) -> float:
    hi, lo = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


# Every colour a drawn plotly chart uses, by role: its marks (points' and bars' outlines and
# opaque fills, lines, error bars, shapes) and its texts (ticks, titles, legend, annotations),
# with the first opaque background behind the chart. Transparent and half-transparent fills
# are left out: a mark with one is judged by its outline.
CHART_COLOURS = """(sel) => {
  const el = document.querySelector(sel);
  const opaque = (c) => c && c !== 'transparent' && c !== 'none'
    && !/^rgba\\(.*,\\s*0(\\.\\d+)?\\)$/.test(c);
  let bg = 'rgb(255, 255, 255)';
  for (let a = el; a; a = a.parentElement) {
    const c = getComputedStyle(a).backgroundColor;
    if (opaque(c)) { bg = c; break; }
  }
  const marks = [], texts = [];
  const take = (list, what, c) => { if (opaque(c)) list.push({what, colour: c}); };
  const each = (s, f) => el.querySelectorAll(s).forEach(f);
  each('.scatterlayer .point, .barlayer .point path, .barlayer path.point', p => {
    take(marks, 'point fill', p.style.fill); take(marks, 'point outline', p.style.stroke); });
  each('.scatterlayer .js-line', p => take(marks, 'line', p.style.stroke));
  each('.errorbar path', p => take(marks, 'error bar', p.style.stroke));
  each('.shapelayer path', p => take(marks, 'shape', p.style.stroke));
  each('.legendlines path', p => take(marks, 'legend line', p.style.stroke));
  each('.xtick text, .ytick text, .y2tick text, .gtitle, .xtitle, .ytitle, .y2title',
    t => take(texts, t.getAttribute('class') + ' ' + t.textContent.slice(0, 24), t.style.fill));
  each('.legendtext, .annotation-text, .bartext',
    t => take(texts, t.getAttribute('class') + ' ' + t.textContent.slice(0, 24), t.style.fill));
  return {bg, marks, texts};
}"""
