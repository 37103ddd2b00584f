"""A page or its htmx fragment, from one view and one template (STYLE: Django 6 template
partials, `template.html#partial`).

The same URL answers with either, so every such response says `Vary: HX-Request` — else a cache
or the browser's back button can serve the fragment as a page. And a history-restore request
(htmx re-fetching a page it no longer has in its cache) gets the whole page, though it carries
HX-Request. (django-htmx-patterns, one render helper.)
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers


def wants_fragment(request: HttpRequest) -> bool:
    """An htmx request for part of a page (not a history restore, which needs it all)."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request


def vary_on_htmx(response: HttpResponse) -> HttpResponse:
    """Mark a response whose content depends on HX-Request (fragment, page or redirect)."""
    patch_vary_headers(response, ("HX-Request",))
    return response


def render_page_or_fragment(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    fragment: str,
    status: int = 200,
) -> HttpResponse:
    """`template` for a page; for an htmx request, `fragment`: `#name` (a partial of the same
    template) or the name of another template."""
    name = template
    if wants_fragment(request):
        name = template + fragment if fragment.startswith("#") else fragment
    return vary_on_htmx(render(request, name, context, status=status))
