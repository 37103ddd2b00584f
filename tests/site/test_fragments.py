"""Every view that answers the same URL with a page or an htmx fragment says `Vary: HX-Request`
(else a cache or the back button can show a fragment as a page), and gives a history-restore
request — htmx re-fetching a page it lost — the whole page (common.rendering)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from auditor.annotation.services import queue_create
from auditor.exports.services import export_create
from tests.annotate.conftest import make_run

HX = {"HTTP_HX_REQUEST": "true"}
RESTORE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}


@pytest.fixture
def urls(project):  # type: ignore[no-untyped-def]
    run = make_run(project, locks=1, examples=False)
    trace = run.results.first().trace
    queue = queue_create(run=run, name="q", k=1)
    export = export_create(project=project, format="csv", enqueue=False)
    return {
        "trace detail": reverse("auditor:trace", args=[trace.pk]),
        "trace event": reverse("auditor:trace-event", args=[trace.pk, 1]),
        "trace list": reverse("auditor:trace-list", args=[project.pk]),
        "run detail": reverse("auditor:run", args=[run.pk]),
        "export detail": reverse("exports:detail", args=[export.pk]),
        "upload detail": reverse("traces:upload", args=[trace.upload_id]),
        "queue detail": reverse("annotate:queue", args=[queue.pk]),
        "annotate": reverse("annotate:next", args=[queue.pk]),
    }


def _is_page(response) -> bool:  # type: ignore[no-untyped-def]
    return b"<html" in response.content


@pytest.mark.django_db
def test_fragment_views_vary_on_hx_request_and_restore_history_with_the_page(client, alice, urls):  # type: ignore[no-untyped-def]
    client.force_login(alice)
    for name, url in urls.items():
        page, fragment, restore = client.get(url), client.get(url, **HX), client.get(url, **RESTORE)
        for r in (page, fragment, restore):
            assert r.status_code == 200, (name, r.status_code)
            assert "HX-Request" in r.get("Vary", ""), (name, r.get("Vary"))
        assert _is_page(page) and _is_page(restore), name
        assert not _is_page(fragment), name


@pytest.mark.django_db
def test_the_timeline_window_redirects_without_htmx_and_varies(client, alice, urls):  # type: ignore[no-untyped-def]
    client.force_login(alice)
    url = urls["trace detail"].rstrip("/") + "/events/?after_seq=0"
    plain, fragment = client.get(url), client.get(url, **HX)
    assert plain.status_code == 302 and fragment.status_code == 200
    assert all("HX-Request" in r.get("Vary", "") for r in (plain, fragment))
