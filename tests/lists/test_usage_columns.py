"""The traces list's duration, tokens and cost: cells ("—" when a trace has no such figure),
keyset-sorted pages with the traces that lack the figure last in either direction, and the
min/max duration, min/max cost and cost-known filters (a bad value means no filter)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.lists.conftest import make_trace, make_upload

pytestmark = pytest.mark.django_db


def _ids(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr data-trace="(\d+)">', html)]


def _link(html: str, rel: str) -> str | None:
    m = re.search(rf'href="(\?[^"]*)" rel="{rel}"', html)
    return m.group(1).replace("&amp;", "&") if m else None


@pytest.fixture
def timed(project):  # type: ignore[no-untyped-def]
    """Three traces: a fast cheap one, a slow dear one, one the source gave no figures for."""
    up = make_upload(project)
    fast = make_trace(
        project, up, "fast", duration_ms=850.0, total_tokens=451, input_tokens=385,
        output_tokens=66, cost_usd=0.002145,
    )  # fmt: skip
    slow = make_trace(
        project, up, "slow", duration_ms=101_533.0, total_tokens=177_276, cost_usd=0.559452
    )
    bare = make_trace(project, up, "bare")
    return fast, slow, bare


def _get(client, project, **params):  # type: ignore[no-untyped-def]
    r = client.get(reverse("auditor:trace-list", args=[project.pk]), params)
    assert r.status_code == 200
    return r.content.decode()


def _row(html: str, pk: int) -> str:
    m = re.search(rf'<tr data-trace="{pk}">(.*?)</tr>', html, re.S)
    assert m, pk
    return m.group(1)


def test_cells_show_figures_and_a_dash_where_the_source_gave_none(client, alice, project, timed):
    fast, slow, bare = timed
    client.force_login(alice)
    html = _get(client, project)
    cells = lambda pk: re.findall(r'<td class="num usage"[^>]*>([^<]*)</td>', _row(html, pk))  # noqa: E731
    assert cells(fast.pk) == ["850 ms", "451", "$0.0021"]
    assert cells(slow.pk) == ["1 min 42 s", "177,276", "$0.559"]
    assert cells(bare.pk) == ["—", "—", "—"]
    assert 'href="?sort=duration"' in html and 'href="?sort=cost"' in html


@pytest.mark.parametrize("sort", ["cost", "-cost", "duration", "-duration", "tokens", "-tokens"])
def test_traces_without_the_figure_come_last_either_way(client, alice, project, timed, sort):
    fast, slow, bare = timed
    client.force_login(alice)
    ids = _ids(_get(client, project, sort=sort))
    known = [fast.pk, slow.pk] if not sort.startswith("-") else [slow.pk, fast.pk]
    assert ids == [*known, bare.pk]


@pytest.mark.parametrize("sort", ["cost", "-duration"])
def test_sorted_pages_with_missing_figures_cover_every_trace_once(client, alice, project, sort):
    up = make_upload(project)
    traces = []
    for i in range(130):
        # many ties, and every third trace without the figure: ties and nulls both need the id
        value = None if i % 3 == 0 else float(i % 5)
        traces.append(make_trace(project, up, f"t{i:03d}", cost_usd=value, duration_ms=value))
    field = "cost_usd" if "cost" in sort else "duration_ms"
    desc = sort.startswith("-")
    known = sorted(
        (t for t in traces if getattr(t, field) is not None),
        key=lambda t: (getattr(t, field), t.pk),
        reverse=desc,
    )
    missing = sorted(
        (t for t in traces if getattr(t, field) is None), key=lambda t: t.pk, reverse=desc
    )
    client.force_login(alice)
    url = reverse("auditor:trace-list", args=[project.pk])
    html = client.get(url, {"sort": sort}).content.decode()
    seen, pages = [], []
    while True:
        pages.append(html)
        seen += _ids(html)
        nxt = _link(html, "next")
        if nxt is None:
            break
        html = client.get(url + nxt).content.decode()
    assert seen == [t.pk for t in known + missing]
    prev = _link(pages[-1], "prev")
    assert prev is not None
    assert _ids(client.get(url + prev).content.decode()) == _ids(pages[-2])


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"dur_min": "1"}, ["slow"]),
        ({"dur_max": "60"}, ["fast"]),
        ({"dur_min": "0.5", "dur_max": "200"}, ["fast", "slow"]),
        ({"cost_min": "0.01"}, ["slow"]),
        ({"cost_max": "0.01"}, ["fast"]),
        ({"has_cost": "yes"}, ["fast", "slow"]),
        ({"has_cost": "no"}, ["bare"]),
        ({"dur_min": "200"}, []),
    ],
)
def test_duration_and_cost_filters(client, alice, project, timed, params, expected):
    by_pk = {t.pk: t.external_id for t in timed}
    client.force_login(alice)
    html = _get(client, project, **params)
    assert sorted(by_pk[pk] for pk in _ids(html)) == expected
    for key, value in params.items():
        assert f'name="{key}" value="{value}"' in html or f'value="{value}" selected' in html


@pytest.mark.parametrize(
    "params",
    [{"dur_min": "soon"}, {"cost_max": "-1"}, {"cost_min": "nan"}, {"has_cost": "maybe"},
     {"dur_max": "1e400"}],
)  # fmt: skip
def test_a_bad_filter_value_means_no_filter(client, alice, project, timed, params):
    client.force_login(alice)
    html = _get(client, project, **params)
    assert len(_ids(html)) == 3


def test_filters_keep_to_the_project(client, alice, charlie, project, timed):
    client.force_login(charlie)
    r = client.get(reverse("auditor:trace-list", args=[project.pk]), {"has_cost": "yes"})
    assert r.status_code == 404
