"""The traces list's saved views, column chooser, date range, trace-id search and tag filter,
through the Django test client on the real database."""

from __future__ import annotations

import datetime
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from auditor.trace_list.columns import COLUMNS, DEFAULT, SORTS
from auditor.trace_list.models import ListColumns, SavedView
from auditor.trace_notes.services import tag_add
from tests.lists.conftest import make_trace, make_upload
from traces.models import Membership, Project, Trace

pytestmark = pytest.mark.django_db


@pytest.fixture
def listed(project):  # type: ignore[no-untyped-def]
    up = make_upload(project)
    out = {}
    for i, (tid, model) in enumerate(
        [("run-a/task-1", "gpt-x"), ("run-a/task-2", "claude"), ("run-b/task-1", "gpt-x")]
    ):
        out[tid] = make_trace(project, up, tid, model=model, benchmark="b", category="c")
        # one trace a day, from 2026-03-01
        Trace.objects.filter(pk=out[tid].pk).update(
            created_at=timezone.make_aware(datetime.datetime(2026, 3, 1 + i, 12))
        )
    return out


def ids(response) -> list[str]:  # type: ignore[no-untyped-def]
    body = response.content.decode()
    return sorted(t for t in ("run-a/task-1", "run-a/task-2", "run-b/task-1") if f">{t}<" in body)


def url(project, **q) -> str:  # type: ignore[no-untyped-def]
    from urllib.parse import urlencode

    return f"/projects/{project.pk}/traces/" + (f"?{urlencode(q)}" if q else "")


def test_the_registry_names_every_sort_and_the_defaults():
    assert set(SORTS) == {
        *("trace", "model", "benchmark", "category", "events"),
        *("duration", "tokens", "cost", "created"),
    }
    assert DEFAULT[0] == "trace" and "created" not in DEFAULT
    assert all(c.label for c in COLUMNS)


def test_trace_id_matches_exactly_or_by_prefix(client, alice, project, listed):
    client.force_login(alice)
    assert ids(client.get(url(project, tid="run-a/task-1"))) == ["run-a/task-1"]
    assert ids(client.get(url(project, tid="run-a/"))) == ["run-a/task-1", "run-a/task-2"]
    assert ids(client.get(url(project, tid="nothing"))) == []
    # LIKE's wildcards are taken literally
    assert ids(client.get(url(project, tid="run-_"))) == []
    assert ids(client.get(url(project, tid="%"))) == []


def test_date_range_is_inclusive_and_bad_dates_are_said(client, alice, project, listed):
    client.force_login(alice)
    assert ids(client.get(url(project, **{"from": "2026-03-02"}))) == [
        "run-a/task-2",
        "run-b/task-1",
    ]
    assert ids(client.get(url(project, to="2026-03-02"))) == ["run-a/task-1", "run-a/task-2"]
    assert ids(client.get(url(project, **{"from": "2026-03-02", "to": "2026-03-02"}))) == [
        "run-a/task-2"
    ]
    r = client.get(url(project, **{"from": "yesterday", "to": "9999-12-31"}))
    assert r.status_code == 200
    assert "from &#x27;yesterday&#x27; is not a date" in r.content.decode()
    assert len(ids(r)) == 3
    r = client.get(url(project, **{"from": "2026-03-03", "to": "2026-03-01"}))
    assert "ends (2026-03-01) before it starts" in r.content.decode() and len(ids(r)) == 3


def test_tag_filter_matches_any_case(client, alice, project, listed):
    tag_add(trace=listed["run-a/task-2"], name="Needs-Review", user=alice)
    client.force_login(alice)
    assert ids(client.get(url(project, tag="needs-review"))) == ["run-a/task-2"]
    r = client.get(url(project, tag="NEEDS-REVIEW"))
    assert ids(r) == ["run-a/task-2"]
    body = r.content.decode()
    assert 'class="tag"' in body and "Needs-Review" in body
    assert ids(client.get(url(project, tag="other"))) == []


def test_columns_choice_is_remembered_and_in_the_url(client, alice, project, listed):
    client.force_login(alice)
    r = client.post(
        f"/projects/{project.pk}/traces/columns/",
        {"col": ["model", "created", "bogus"], "query": "model=gpt-x&after=5"},
    )
    assert r.status_code == 302
    q = parse_qs(urlsplit(r["Location"]).query)
    assert q == {"model": ["gpt-x"], "cols": ["trace,model,created"]}
    assert ListColumns.objects.get(user=alice, project=project).columns == [
        "trace",
        "model",
        "created",
    ]
    # the list without ?cols= shows the remembered columns
    body = client.get(url(project)).content.decode()
    assert 'class="col-created' in body and 'class="col-benchmark' not in body
    assert "2026-03-01" in body
    # an explicit ?cols= wins, and sorting by a chosen column works
    body = client.get(url(project, cols="events", sort="-created")).content.decode()
    assert 'class="col-events num"' in body and 'class="col-model' not in body
    # choosing nothing is refused with a message; the default choice forgets the row
    r = client.post(f"/projects/{project.pk}/traces/columns/", {"query": ""}, follow=True)
    assert "Choose at least one column" in r.content.decode()
    client.post(f"/projects/{project.pk}/traces/columns/", {"col": list(DEFAULT)})
    assert not ListColumns.objects.filter(user=alice).exists()


def test_saved_view_keeps_the_query_and_applies_by_id(client, alice, project, listed):
    client.force_login(alice)
    r = client.post(
        f"/projects/{project.pk}/traces/views/",
        {"name": "  gpt   runs ", "query": "model=gpt-x&tid=run-&after=99&view=3&evil=1"},
    )
    view = SavedView.objects.get()
    assert view.name == "gpt runs" and view.query == "model=gpt-x&tid=run-"
    assert r["Location"] == f"/projects/{project.pk}/traces/?model=gpt-x&tid=run-&view={view.pk}"
    # ?view=<id> alone opens the view at its query
    r = client.get(url(project, view=view.pk))
    assert r.status_code == 302 and r["Location"].endswith(f"?model=gpt-x&tid=run-&view={view.pk}")
    r = client.get(r["Location"])
    assert ids(r) == ["run-a/task-1", "run-b/task-1"]
    assert "view “gpt runs”" in r.content.decode()
    # the same name twice is refused with a message, not an error page
    r = client.post(
        f"/projects/{project.pk}/traces/views/", {"name": "gpt runs", "query": ""}, follow=True
    )
    assert r.status_code == 200 and "already have a view named" in r.content.decode()
    # rename, then delete
    client.post(
        f"/projects/{project.pk}/traces/views/{view.pk}/", {"action": "update", "name": "GPT"}
    )
    view.refresh_from_db()
    assert view.name == "GPT" and not view.shared
    r = client.post(
        f"/projects/{project.pk}/traces/views/{view.pk}/", {"action": "bogus"}, follow=True
    )
    assert "unknown action" in r.content.decode()
    client.post(f"/projects/{project.pk}/traces/views/{view.pk}/", {"action": "delete"})
    assert not SavedView.objects.exists()


def test_bad_view_input_is_said(client, alice, project, listed):
    client.force_login(alice)
    for name, said in (("", "needs a name"), ("x" * 81, "at most 80 characters")):
        r = client.post(
            f"/projects/{project.pk}/traces/views/", {"name": name, "query": ""}, follow=True
        )
        assert r.status_code == 200 and said in r.content.decode()
    r = client.get(url(project, view="999999"))
    assert r.status_code == 200 and "does not exist or is not shared with you" in r.content.decode()
    assert client.get(url(project, view="x" * 50)).status_code == 200


def test_shared_views_show_to_members_and_personal_ones_do_not(
    client, alice, charlie, project, listed, django_user_model
):
    bob = django_user_model.objects.create_user("bob", password="bob-pw")
    Membership.objects.create(project=project, user=bob, role="viewer")
    client.force_login(alice)
    client.post(
        f"/projects/{project.pk}/traces/views/",
        {"name": "team", "query": "model=claude", "shared": "on"},
    )
    client.post(f"/projects/{project.pk}/traces/views/", {"name": "mine", "query": ""})
    team, mine = SavedView.objects.get(name="team"), SavedView.objects.get(name="mine")
    assert team.shared
    client.force_login(bob)
    body = client.get(url(project)).content.decode()
    assert ">team</a>" in body and ">mine</a>" not in body
    assert "does not exist" in client.get(url(project, view=mine.pk)).content.decode()
    # a viewer keeps views for themselves, and cannot change someone else's
    r = client.post(
        f"/projects/{project.pk}/traces/views/",
        {"name": "b", "query": "", "shared": "on"},
        follow=True,
    )
    assert "viewers keep views for themselves" in r.content.decode()
    r = client.post(
        f"/projects/{project.pk}/traces/views/{team.pk}/",
        {"action": "delete"},
        follow=True,
    )
    assert "only they delete it" in r.content.decode()
    assert SavedView.objects.filter(pk=team.pk).exists()
    assert (
        client.post(
            f"/projects/{project.pk}/traces/views/{mine.pk}/", {"action": "delete"}
        ).status_code
        == 404
    )
    # an outsider: the project's list and views are 404
    other = Project.objects.create(name="other")
    Membership.objects.create(project=other, user=charlie, role="owner")
    client.force_login(charlie)
    assert client.get(url(project, view=team.pk)).status_code == 404
    assert (
        client.post(
            f"/projects/{project.pk}/traces/views/{team.pk}/", {"action": "delete"}
        ).status_code
        == 404
    )
    # a view id of another project does not apply in one's own
    r = client.get(f"/projects/{other.pk}/traces/?view={team.pk}")
    assert r.status_code == 200 and "does not exist" in r.content.decode()


def test_share_link_carries_the_state(client, alice, project, listed):
    client.force_login(alice)
    body = client.get(url(project, model="gpt-x", cols="model", after="3")).content.decode()
    assert (
        f'value="http://testserver/projects/{project.pk}/traces/?model=gpt-x&amp;cols=trace%2Cmodel"'
        in body
    )


def test_a_view_without_filters_opens_without_a_redirect_loop(client, alice, project, listed):
    client.force_login(alice)
    client.post(f"/projects/{project.pk}/traces/views/", {"name": "all", "query": ""})
    view = SavedView.objects.get()
    r = client.get(url(project, view=view.pk))
    assert r.status_code == 200 and "view “all”" in r.content.decode()
    # the toolbar saves the columns with the filters, so a view shows what was saved
    body = client.get(url(project, model="gpt-x")).content.decode()
    assert (
        'name="query" value="model=gpt-x&amp;cols=trace%2Cmodel%2Cbenchmark%2Ccategory%2C'
        'outcome%2Cevents%2Cduration%2Ctokens%2Ccost%2Ctags%2Ctransitions"' in body
    )


def test_date_range_pages_cover_every_trace_once_newest_first(client, alice, project):
    """A date range reads newest first by creation time (through its index); the pages, with
    ties of one timestamp across a page boundary, hold each trace of the range once."""
    up = make_upload(project)
    day = timezone.make_aware(datetime.datetime(2026, 5, 1, 8))
    made = []
    for i in range(130):
        t = make_trace(project, up, f"d-{i:03d}")
        # five traces share each timestamp; the first ten fall the day before the range
        at = (
            day + datetime.timedelta(minutes=(i // 5)) - datetime.timedelta(days=1 if i < 10 else 0)
        )
        Trace.objects.filter(pk=t.pk).update(created_at=at)
        made.append((at, t.pk, t.external_id))
    client.force_login(alice)
    want = [tid for at, pk, tid in sorted(made, reverse=True) if at >= day]
    seen: list[str] = []
    link = url(project, **{"from": "2026-05-01", "to": "2026-05-01"})
    while link:
        body = client.get(link).content.decode()
        seen += re.findall(r"<code>(d-\d{3})</code>", body)
        nxt = re.search(r'href="(\?[^"]*after=\d+)" rel="next"', body)
        link = f"/projects/{project.pk}/traces/" + nxt.group(1).replace("&amp;", "&") if nxt else ""
    assert seen == want and len(want) == 120
