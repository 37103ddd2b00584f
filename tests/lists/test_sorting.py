"""Sortable traces-list columns with keyset pages: walking every page forward and back in a
column's order sees each trace once, in order; a bad sort is ignored, never an error."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.lists.conftest import make_trace, make_upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def many(project):  # type: ignore[no-untyped-def]
    up = make_upload(project)
    traces = []
    for i in range(120):
        # few distinct values: ties must be broken by id, or pages would repeat or skip rows
        t = make_trace(project, up, f"t{i:03d}", model=f"m{i % 7}")
        t.event_count = (i * 37) % 11
        t.save(update_fields=["event_count"])
        traces.append(t)
    return traces


def _ids(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr data-trace="(\d+)">', html)]


def _link(html: str, rel: str) -> str | None:
    m = re.search(rf'href="(\?[^"]*)" rel="{rel}"', html)
    return m.group(1).replace("&amp;", "&") if m else None


@pytest.mark.parametrize("sort", ["model", "-events", "trace", "-category"])
def test_sorted_pages_cover_every_trace_once_in_order(client, alice, project, many, sort):
    client.force_login(alice)
    url = reverse("auditor:trace-list", args=[project.pk])
    field = {"model": "model", "events": "event_count", "trace": "external_id"}.get(
        sort.lstrip("-"), "category"
    )
    expected = sorted(many, key=lambda t: (getattr(t, field), t.pk), reverse=sort.startswith("-"))
    seen: list[int] = []
    pages: list[str] = []
    html = client.get(url, {"sort": sort}).content.decode()
    while True:
        pages.append(html)
        seen += _ids(html)
        nxt = _link(html, "next")
        if nxt is None:
            break
        html = client.get(url + nxt).content.decode()
    assert seen == [t.pk for t in expected]
    # and back: the previous page of the last page is the one before it
    prev = _link(pages[-1], "prev")
    assert prev is not None
    assert _ids(client.get(url + prev).content.decode()) == _ids(pages[-2])
    assert 'aria-sort="' in pages[0]


def test_a_bad_sort_is_ignored(client, alice, project, many):
    client.force_login(alice)
    url = reverse("auditor:trace-list", args=[project.pk])
    r = client.get(url, {"sort": "payload; drop table"})
    assert r.status_code == 200
    assert _ids(r.content.decode()) == [t.pk for t in sorted(many, key=lambda t: -t.pk)][:50]
