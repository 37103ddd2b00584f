"""Where the pages of traces' objects live. traces serves uploads but not the project dashboard,
the trace page or the traces list: those show audits too, so the project serves them elsewhere
and names them in the setting TRACES_PAGES ({"project" | "trace" | "trace-list": URL name}).
traces knows nothing of who serves them (SPEC §2: traces depends on no other app).

Without the setting (traces used on its own) a project links to the home page, a trace to its
API resource and a project's traces to the API's trace list.
"""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse

FALLBACK = {"project": "traces:home", "trace": "api:trace-detail", "trace-list": "api:trace-list"}


def page_url(page: str, pk: int) -> str:
    """The URL of a `page` ("project", "trace", "trace-list") of the object `pk`."""
    name = (getattr(settings, "TRACES_PAGES", None) or {}).get(page)
    if name:
        return reverse(name, args=[pk])
    fallback = FALLBACK[page]
    return reverse(fallback, args=[pk]) if page == "trace" else reverse(fallback)
