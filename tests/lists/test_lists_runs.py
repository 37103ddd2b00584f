"""Dashboard, traces list (filters, search, keyset pages), run page and run comparison."""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from auditor.models import AuditItem, AuditResult, AuditRun
from auditor.trace_list.selectors import PAGE_SIZE
from policies.stats.report import MATRIX_KEY
from tests.lists.conftest import make_trace, make_upload
from traces import search
from traces.models import Event, Trace, Upload

pytestmark = pytest.mark.django_db


def summary_for(policies, transitions):  # type: ignore[no-untyped-def]
    out = {}
    for p in policies:
        tr = {"rescue": 0, "harm": 0, "same": 0, "unknown": 0, **transitions.get(p, {})}
        row = {
            "n": sum(tr.values()),
            "n_paired": tr["rescue"] + tr["harm"] + tr["same"],
            "transitions": tr,
            "actor_success": 0.5,
            "guarded_success": 0.6,
            "delta": 0.1,
            "ci": [0.01, 0.19],
            "mcnemar_p": 0.042,
        }
        out[p] = {
            "policy": p,
            "n_traces": row["n"],
            "applied": 1,
            "settings": {"theta": 0.5},
            "overall": row,
            "per_category": {"cat-a": {**row, "mcnemar_p_holm": 0.08}},
        }
    return out


@pytest.fixture
def data(project):  # type: ignore[no-untyped-def]
    """Four visible traces, one trace of an unfinished upload, and two finished runs."""
    up = make_upload(project)
    t1 = make_trace(project, up, "t1", model="gpt-x", benchmark="b1", category="cat-a",
                    outcome_success=False)  # fmt: skip
    t2 = make_trace(project, up, "t2", model="gpt-x", benchmark="b2", category="cat-b",
                    outcome_success=True)  # fmt: skip
    t3 = make_trace(project, up, "t3", model="claude", benchmark="b1", category="cat-a",
                    outcome_success=True)  # fmt: skip
    t4 = make_trace(project, up, "t4", model="claude", benchmark="b1", category="",
                    outcome_success=None)  # fmt: skip
    Event.objects.create(
        trace=t3, seq=1, type="message", line=2,
        payload={"type": "message", "role": "user", "content": "the zanzibar flamingo migrates"},
    )  # fmt: skip
    hidden_up = make_upload(project, status=Upload.Status.RUNNING, name="half.jsonl")
    hidden = make_trace(project, hidden_up, "hidden", model="gpt-x")
    Event.objects.create(
        trace=hidden, seq=1, type="message", line=2, payload={"content": "zanzibar"}
    )
    # What the indexing task does after an upload is done (PostgreSQL; SQLite needs nothing).
    search.index_traces([t3.pk, hidden.pk])
    runs = []
    for label, t1_tr in (("base", "same"), ("strict", "rescue")):
        run = AuditRun.objects.create(
            project=project, label=label, policies=["checklist", "twincheck"],
            settings={"checklist": {"theta": 0.5 if label == "base" else 0.9}},
            status=AuditRun.Status.DONE, traces_total=4, traces_done=4,
        )  # fmt: skip
        spec = {
            # trace: (actor, guarded, transition) for checklist; twincheck is "same" or unknown
            t1: (False, True if t1_tr == "rescue" else False, t1_tr),
            t2: (True, False, "harm"),
            t3: (True, True, "same"),
            t4: (None, None, "unknown"),
        }
        for t, (a, g, tr) in spec.items():
            AuditItem.objects.create(run=run, trace=t, status="done")
            AuditResult.objects.create(
                run=run, trace=t, policy="checklist", applied=tr in ("rescue", "harm"),
                actor_success=a, guarded_success=g, transition=tr, continuation="exact",
                record={},
            )  # fmt: skip
            AuditResult.objects.create(
                run=run, trace=t, policy="twincheck", applied=False, actor_success=a,
                guarded_success=a, transition="unknown" if a is None else "same",
                continuation="exact", record={},
            )  # fmt: skip
        run.summary = summary_for(
            run.policies,
            {"checklist": {"rescue": int(t1_tr == "rescue"), "harm": 1,
                           "same": 1 + int(t1_tr == "same"), "unknown": 1},
             "twincheck": {"same": 3, "unknown": 1}},
        )  # fmt: skip
        # The matrix cells the run's summary keeps, as the summary task writes them.
        for policy, pairs in (
            ("checklist", [(a, g) for a, g, _ in spec.values()]),
            ("twincheck", [(a, a) for a, _, _ in spec.values()]),
        ):
            run.summary[policy][MATRIX_KEY] = [[a, g, n] for (a, g), n in Counter(pairs).items()]
        run.save()
        runs.append(run)
    return {"traces": [t1, t2, t3, t4], "hidden": hidden, "runs": runs, "upload": up}


def ids(response) -> list[str]:  # type: ignore[no-untyped-def]
    return [r["trace"].external_id for r in response.context["rows"]]


def list_url(project, **params) -> str:  # type: ignore[no-untyped-def]
    from urllib.parse import urlencode

    return reverse("auditor:trace-list", args=[project.pk]) + "?" + urlencode(params)


# --- traces list -------------------------------------------------------------------------


def test_list_shows_visible_traces_newest_first(client, alice, project, data):
    client.force_login(alice)
    r = client.get(list_url(project))
    assert r.status_code == 200
    assert ids(r) == ["t4", "t3", "t2", "t1"]  # the trace of the running upload is not shown
    assert r.context["run"] == data["runs"][1]  # default: the latest run
    assert b'id="filters"' in r.content and b'id="rows"' in r.content


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"model": "gpt-x"}, ["t2", "t1"]),
        ({"benchmark": "b1"}, ["t4", "t3", "t1"]),
        ({"category": "cat-a"}, ["t3", "t1"]),
        ({"category": "—"}, ["t4"]),
        ({"outcome": "unknown"}, ["t4"]),
        ({"outcome": "failure"}, ["t1"]),
        ({"policy": "checklist", "transition": "harm"}, ["t2"]),
        ({"policy": "checklist", "transition": "rescue"}, ["t1"]),  # latest run: "strict"
        ({"policy": "twincheck", "transition": "rescue"}, []),
        ({"transition": "unknown"}, ["t4"]),
        ({"policy": "checklist", "applied": "yes"}, ["t2", "t1"]),
        ({"policy": "checklist", "applied": "no"}, ["t4", "t3"]),
        ({"policy": "checklist", "actor": "failure", "guarded": "success"}, ["t1"]),
        ({"policy": "checklist", "actor": "unknown"}, ["t4"]),
        ({"model": "claude", "benchmark": "b1", "category": "cat-a"}, ["t3"]),
        ({"model": "nonexistent"}, []),
        ({"transition": "bogus", "actor": "maybe", "run": "999999"}, ["t4", "t3", "t2", "t1"]),
    ],
)
def test_filters_really_filter(client, alice, project, data, params, expected):
    client.force_login(alice)
    r = client.get(list_url(project, **params))
    assert r.status_code == 200
    assert ids(r) == expected


def test_transition_filter_reads_the_selected_run(client, alice, project, data):
    client.force_login(alice)
    base, strict = data["runs"]
    r = client.get(list_url(project, run=base.pk, policy="checklist", transition="rescue"))
    assert ids(r) == []
    r = client.get(list_url(project, run=strict.pk, policy="checklist", transition="rescue"))
    assert ids(r) == ["t1"]


def test_filter_choices_come_from_the_data(client, alice, project, data):
    client.force_login(alice)
    r = client.get(list_url(project))
    choices = {c["field"]: c["values"] for c in r.context["choices"]}
    assert choices == {
        "model": ["claude", "gpt-x"],
        "benchmark": ["b1", "b2"],
        "category": ["—", "cat-a", "cat-b"],
    }


def test_search_finds_a_word_present_only_in_event_content(client, alice, project, data):
    client.force_login(alice)
    assert ids(client.get(list_url(project, q="zanzibar"))) == ["t3"]
    assert ids(client.get(list_url(project, q="Flamingo zanzibar"))) == ["t3"]
    assert ids(client.get(list_url(project, q="zanzibar penguin"))) == []
    assert ids(client.get(list_url(project, q="zanzibar", model="gpt-x"))) == []
    # punctuation only: no words, no filter (and no error)
    assert len(ids(client.get(list_url(project, q="'&|!(")))) == 4


def test_htmx_request_gets_only_the_rows_fragment(client, alice, project, data):
    client.force_login(alice)
    r = client.get(list_url(project, model="claude"), HTTP_HX_REQUEST="true")
    assert r.status_code == 200
    body = r.content.decode()
    assert body.lstrip().startswith('<section id="rows"')
    assert "<html" not in body and 'id="filters"' not in body
    assert ids(r) == ["t4", "t3"]
    assert "HX-Request" in r["Vary"]


def test_history_restore_gets_the_full_page(client, alice, project, data):
    client.force_login(alice)
    r = client.get(
        list_url(project, model="claude"),
        HTTP_HX_REQUEST="true",
        HTTP_HX_HISTORY_RESTORE_REQUEST="true",
    )
    assert b"<html" in r.content and b'id="filters"' in r.content


def test_filter_form_and_pager_links_work_without_javascript(client, alice, project, data):
    client.force_login(alice)
    body = client.get(list_url(project)).content.decode()
    form = re.search(r'<form id="filters"[^>]*>', body).group(0)
    url = reverse("auditor:trace-list", args=[project.pk])
    assert f'action="{url}"' in form and f'hx-get="{url}"' in form
    assert 'method="get"' in form and 'hx-push-url="true"' in form
    for a in re.findall(r"<a [^>]*hx-get[^>]*>", body):
        assert re.search(r'href="([^"]*)"', a).group(1) == re.search(r'hx-get="([^"]*)"', a).group(
            1
        )


def test_keyset_pages_have_no_duplicates_or_gaps(client, alice, project):
    client.force_login(alice)
    up = make_upload(project)
    Trace.objects.bulk_create(
        Trace(project=project, upload=up, external_id=f"k{i:04d}", model="m")
        for i in range(PAGE_SIZE * 2 + 7)
    )
    seen: list[str] = []
    url = list_url(project, model="m")
    pages = 0
    while url:
        r = client.get(url)
        assert r.status_code == 200
        seen += ids(r)
        nxt = r.context["next_url"]
        assert "model=m" in (nxt or "model=m")  # filters survive paging
        url = reverse("auditor:trace-list", args=[project.pk]) + nxt if nxt else None
        pages += 1
    assert pages == 3
    expected = sorted((f"k{i:04d}" for i in range(PAGE_SIZE * 2 + 7)), reverse=True)
    assert seen == expected  # every trace once, in order
    # and back: the previous page of page 2 is page 1
    first = client.get(list_url(project, model="m"))
    second = client.get(
        reverse("auditor:trace-list", args=[project.pk]) + first.context["next_url"]
    )
    back = client.get(reverse("auditor:trace-list", args=[project.pk]) + second.context["prev_url"])
    assert ids(back) == ids(first)
    assert back.context["prev_url"] is None


def test_pages_of_a_project_whose_traces_interleave_with_another_projects(client, alice, project):
    """Page 1 starts at the project's newest trace id (the bound that spares the scan of other
    projects' newer traces): ids interleaved with another project's, and the project's newest
    id in an upload still in progress, every visible trace is listed once, in order."""
    from traces.models import Project

    client.force_login(alice)
    other = Project.objects.create(name="other")
    up, other_up = make_upload(project), make_upload(other, name="o.jsonl")
    for i in range(PAGE_SIZE + 5):
        Trace.objects.create(project=project, upload=up, external_id=f"a{i:03d}")
        Trace.objects.create(project=other, upload=other_up, external_id=f"b{i:03d}")
    pending = make_upload(project, status=Upload.Status.PENDING, name="p.jsonl")
    Trace.objects.create(project=project, upload=pending, external_id="hidden")
    Trace.objects.create(project=other, upload=other_up, external_id="b-newest")
    first = client.get(list_url(project))
    second = client.get(
        reverse("auditor:trace-list", args=[project.pk]) + first.context["next_url"]
    )
    expected = [f"a{i:03d}" for i in reversed(range(PAGE_SIZE + 5))]
    assert ids(first) + ids(second) == expected
    assert second.context["next_url"] is None


def test_hostile_ids_and_model_names_are_escaped(client, alice, project):
    client.force_login(alice)
    up = make_upload(project)
    make_trace(project, up, "<script>alert(1)</script>", model="<script>evil()</script>",
               category='"><img src=x onerror=alert(2)>')  # fmt: skip
    body = client.get(list_url(project)).content.decode()
    assert "<script>alert(1)" not in body and "<script>evil()" not in body
    assert "<img src=x" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "&lt;script&gt;evil()&lt;/script&gt;" in body  # in the model column and its <option>


# --- dashboard ---------------------------------------------------------------------------


def test_dashboard_shows_headline_and_attention(client, alice, project, data):
    client.force_login(alice)
    make_upload(project, status=Upload.Status.FAILED, name="broken.jsonl")
    AuditRun.objects.filter(pk=data["runs"][0].pk).update(error_count=2)
    r = client.get(reverse("auditor:project", args=[project.pk]))
    assert r.status_code == 200
    body = r.content.decode()
    assert r.context["trace_count"] == 4
    assert "broken.jsonl" in body and "failed" in body
    assert f"Run #{data['runs'][0].pk}</a>: 2 traces could not be audited" in body
    latest = data["runs"][1]
    unknown_url = list_url(project, run=latest.pk, policy="checklist", transition="unknown")
    assert unknown_url.replace("&", "&amp;") in body
    assert [h["policy"] for h in r.context["headline"]] == ["checklist", "twincheck"]
    assert r.context["headline"][0]["rescue"] == 1 and r.context["headline"][0]["harm"] == 1
    # the card counts the traces of unknown outcome as "Needs attention" does, and links them
    card = body.split('data-policy="checklist"')[1].split("</div>")[0]
    unknown = r.context["headline"][0]["unknown"]
    assert unknown > 0 and unknown_url.replace("&", "&amp;") in card
    assert f"{unknown} trace{'s' if unknown > 1 else ''} of unknown outcome" in card


def test_dashboard_without_runs(client, alice, project):
    client.force_login(alice)
    r = client.get(reverse("auditor:project", args=[project.pk]))
    assert r.status_code == 200 and b"No audits yet" in r.content


# --- run page ----------------------------------------------------------------------------


def test_run_page_matrix_cells_link_to_their_traces(client, alice, project, data):
    client.force_login(alice)
    run = data["runs"][1]
    r = client.get(run.get_absolute_url())
    assert r.status_code == 200
    body = r.content.decode()
    assert 'id="status"' in body and 'data-status="done"' in body
    checklist = r.context["tables"][0]
    grid = checklist["matrix"]
    # rows: actor success / failure / unknown; columns: guarded success / failure / unknown
    assert [[c["n"] for c in row] for row in grid] == [[1, 1, 0], [1, 0, 0], [0, 0, 1]]
    assert grid[1][0]["kind"] == "rescue" and grid[0][1]["kind"] == "harm"
    for row in grid:
        for cell in row:
            listed = client.get(cell["url"])
            assert len(ids(listed)) == cell["n"], cell
            assert cell["url"].replace("&", "&amp;") in body
    # the per-category and rescue/harm links filter too
    assert ids(client.get(checklist["links"]["rescue"])) == ["t1"]
    assert ids(client.get(checklist["links"]["harm"])) == ["t2"]
    cat = checklist["categories"][0]
    assert cat["category"] == "cat-a"
    assert ids(client.get(cat["links"]["all"])) == ["t3", "t1"]
    assert "[0.010, 0.190]" in body and "0.042" in body  # Δ CI and McNemar p from the summary


def test_run_status_fragment_polls_while_running(client, alice, project, data):
    client.force_login(alice)
    run = data["runs"][1]
    AuditRun.objects.filter(pk=run.pk).update(status="running", traces_done=2)
    r = client.get(run.get_absolute_url(), HTTP_HX_REQUEST="true")
    body = r.content.decode()
    assert body.lstrip().startswith('<section id="status"')
    assert 'data-status="running"' in body and 'hx-trigger="every 1s"' in body
    assert "<html" not in body
    assert 'id="run-eta"' not in body  # not started: no rate to estimate from
    # 2 of 4 done in the 30 s since it started: about 30 s left, said under the progress bar
    started = timezone.now() - timedelta(seconds=30)
    AuditRun.objects.filter(pk=run.pk).update(started_at=started)
    body = client.get(run.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    assert re.search(r'id="run-eta">about (30|31) s left<', body), body
    AuditRun.objects.filter(pk=run.pk).update(started_at=started - timedelta(hours=1))
    body = client.get(run.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    assert re.search(r'id="run-eta">about (60|61) min left<', body), body  # 3,630 s
    AuditRun.objects.filter(pk=run.pk).update(status="done", traces_done=4)
    body = client.get(run.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    assert 'data-status="done"' in body and "hx-trigger" not in body
    assert 'class="matrix"' in body


def test_run_page_lists_failed_traces_escaped(client, alice, project, data):
    client.force_login(alice)
    run = data["runs"][1]
    t = data["traces"][0]
    Trace.objects.filter(pk=t.pk).update(external_id="<script>x()</script>")
    AuditItem.objects.filter(run=run, trace=t).update(status="error", error="<b>boom</b>")
    AuditRun.objects.filter(pk=run.pk).update(error_count=1)
    body = client.get(run.get_absolute_url()).content.decode()
    assert "Failed traces" in body and "&lt;b&gt;boom&lt;/b&gt;" in body
    assert "<script>x()" not in body


# --- comparison --------------------------------------------------------------------------


def test_compare_shows_settings_diff_and_differing_traces(client, alice, project, data):
    client.force_login(alice)
    a, b = data["runs"]
    r = client.get(reverse("auditor:run-compare") + f"?a={a.pk}&b={b.pk}")
    assert r.status_code == 200
    changed = {s["key"]: (s["a"], s["b"]) for s in r.context["settings"] if s["changed"]}
    assert changed == {"checklist.theta": (0.5, 0.9)}
    diff = r.context["differing"]
    assert diff["total"] == 1 and diff["per_policy"] == {"checklist": 1}
    row = diff["rows"][0]
    assert (row.trace.external_id, row.transition, row.b_transition) == ("t1", "same", "rescue")
    assert row.trace.get_absolute_url() in r.content.decode()
    assert [p["policy"] for p in r.context["policy_rows"]] == ["checklist", "twincheck"]


def test_compare_form_without_runs(client, alice, project, data):
    client.force_login(alice)
    r = client.get(reverse("auditor:run-compare"))
    assert r.status_code == 200 and b"Pick two runs" in r.content


def test_compare_rejects_runs_of_two_projects(client, alice, project, data):
    from traces.models import Membership, Project

    other = Project.objects.create(name="beta")
    Membership.objects.create(project=other, user=alice, role="owner")
    c = AuditRun.objects.create(project=other, policies=["checklist"], status="done")
    client.force_login(alice)
    r = client.get(reverse("auditor:run-compare") + f"?a={data['runs'][0].pk}&b={c.pk}")
    assert r.status_code == 400


# --- access ------------------------------------------------------------------------------


def test_outsider_gets_404_everywhere(client, charlie, project, data):
    client.force_login(charlie)
    a, b = data["runs"]
    for url in (
        reverse("auditor:project", args=[project.pk]),
        list_url(project),
        list_url(project, q="zanzibar"),
        a.get_absolute_url(),
        reverse("auditor:run-compare") + f"?a={a.pk}&b={b.pk}",
        reverse("auditor:run-compare") + f"?a={a.pk}",
    ):
        assert client.get(url).status_code == 404, url
        assert client.get(url, HTTP_HX_REQUEST="true").status_code == 404, url


def test_anonymous_is_sent_to_login(client, project, data):
    r = client.get(list_url(project))
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]
