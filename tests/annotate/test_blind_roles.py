"""The annotator role sees none of the audit's decisions anywhere (traces list, trace page, run
page and its matrix and comparison, dashboard, REST API, exports), and no content of a trace
while a pair on it may still come to them (content search, the REST events). Owners and viewers
see everything as before."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from auditor.annotation.services import queue_create
from auditor.exports.services import export_build, export_create
from auditor.models import AuditResult
from traces import search
from traces.models import Trace

pytestmark = pytest.mark.django_db

# What names a decision on a page: a transition badge or cell, a run picker, a policy table.
DECISION_MARKS = re.compile(
    r'class="tr tr-|id="run-select"|Transition matrix|class="transitions"|id="f-transition"'
    r'|policy-card|data-actor="'
)


@pytest.fixture
def pairs(run, alice):  # type: ignore[no-untyped-def]
    """A queue of the run's pairs (one per lock trace), open for every annotator."""
    queue = queue_create(run=run, name="pairs", kinds=["pair"], user=alice)
    assert queue.items.count() == 3
    return queue


def pair_traces(queue) -> list[Trace]:  # type: ignore[no-untyped-def]
    return [i.result.trace for i in queue.items.select_related("result__trace")]


def as_(client, user):  # type: ignore[no-untyped-def]
    client.force_login(user)
    return client


def count_of(html: str) -> int:
    return int(re.search(r'data-count="(\d+)"', html).group(1))  # type: ignore[union-attr]


def test_traces_list_shows_annotators_no_transitions_and_ignores_audit_filters(
    client, alice, bob, vera, project, pairs
):
    url = reverse("auditor:trace-list", args=[project.pk])
    narrow = f"{url}?policy=twincheck&transition=unknown"
    owner_all = as_(client, alice).get(url).content.decode()
    owner_narrow = client.get(narrow).content.decode()
    assert DECISION_MARKS.search(owner_all) and "twincheck unknown" in owner_all
    assert count_of(owner_narrow) < count_of(owner_all)
    viewer = as_(client, vera).get(narrow).content.decode()
    assert count_of(viewer) == count_of(owner_narrow) and "twincheck unknown" in viewer

    annotator_all = as_(client, bob).get(url).content.decode()
    annotator_narrow = client.get(narrow).content.decode()
    fragment = client.get(narrow, HTTP_HX_REQUEST="true").content.decode()
    for html in (annotator_all, annotator_narrow, fragment):
        assert not DECISION_MARKS.search(html), DECISION_MARKS.search(html)
        assert not re.search(r"\b(rescue|harm)\b", html.split('id="rows"')[1])
    assert "not shown to annotators" in annotator_all
    # the audit filters are dropped, not applied: the same traces as without them
    assert count_of(annotator_narrow) == count_of(annotator_all) == count_of(owner_all)
    # the actor/guarded filters, each of which would split the traces by decision
    for query in ("actor=failure", "guarded=unknown", "applied=yes"):
        assert count_of(client.get(f"{url}?{query}").content.decode()) == count_of(owner_all)


def test_content_search_skips_pairs_that_may_come_to_the_annotator(
    client, alice, bob, project, pairs
):
    locks = pair_traces(pairs)
    search.index_traces([t.pk for t in Trace.objects.filter(project=project)])
    url = reverse("auditor:trace-list", args=[project.pk]) + "?q=unlock_account"
    owner = as_(client, alice).get(url).content.decode()
    assert count_of(owner) == 3 and all(t.external_id in owner for t in locks)
    annotator = as_(client, bob).get(url).content.decode()
    assert count_of(annotator) == 0 and not any(t.external_id in annotator for t in locks)
    # once a pair is judged by them (or closed), its trace is found again
    item = pairs.items.order_by("id").first()
    pairs.items.filter(pk=item.pk).update(status="done")
    found = client.get(url).content.decode()
    assert count_of(found) == 1 and item.result.trace.external_id in found


def test_trace_page_shows_annotators_no_decisions_on_any_trace(client, alice, bob, run):
    # no queue at all: the role alone keeps the decisions back
    trace = AuditResult.objects.filter(run=run, policy="twincheck").first().trace
    url = reverse("auditor:trace", args=[trace.pk])
    owner = as_(client, alice).get(url).content.decode()
    assert 'id="run-select"' in owner and "Transition matrix" not in owner
    for target in (url, f"{url}?run={run.pk}&policy=twincheck"):
        html = as_(client, bob).get(target).content.decode()
        assert 'id="run-select"' not in html and "not shown to annotators" in html
        audit = html.split('id="audit"')[1].split("</section>")[0]
        assert not re.search(r"\b(twin|rescue|harm|guarded)\b", audit, re.I), audit
    # the timeline stays: no pair of this trace waits for bob
    assert 'id="timeline"' in html


def test_rest_events_of_a_pair_trace_are_refused_to_its_annotator(
    client, alice, bob, vera, run, pairs
):
    lock = pair_traces(pairs)[0]
    other = Trace.objects.filter(project=run.project).exclude(
        pk__in=[t.pk for t in pair_traces(pairs)]
    )[0]
    url = reverse("auditor:api-trace-events", args=[lock.pk])
    assert url == f"/api/traces/{lock.pk}/events/"
    for user in (alice, vera):
        r = as_(client, user).get(url)
        assert r.status_code == 200 and "unlock_account" in r.content.decode()
    r = as_(client, bob).get(url)
    assert r.status_code == 403 and "unlock_account" not in r.content.decode()
    assert "waits for your verdict" in r.json()["detail"]
    assert client.get(reverse("auditor:api-trace-events", args=[other.pk])).status_code == 200
    # the trace itself (no audit fields) stays readable
    assert client.get(reverse("api:trace-detail", args=[lock.pk])).status_code == 200


def test_rest_run_gives_annotators_progress_without_results(client, alice, bob, run):
    url = reverse("auditor:api-run", args=[run.pk])
    owner = as_(client, alice).get(url).json()
    assert owner["policies"]["twincheck"]["n"] > 0 and "data_quality" in owner
    body = as_(client, bob).get(url).json()
    assert body["status"] == "done" and body["traces"] == run.traces_total
    assert not {"policies", "data_quality", "trace_usage"} & set(body)
    text = str(body)
    assert not re.search(r"rescue|harm|unknown|actor|guarded|twin", text), text


def test_run_page_dashboard_matrix_and_compare_keep_results_from_annotators(
    client, alice, bob, vera, project, run
):
    page = reverse("auditor:run", args=[run.pk])
    matrix = reverse("auditor:run-matrix", args=[run.pk])
    compare = reverse("auditor:run-compare") + f"?a={run.pk}&b={run.pk}"
    dashboard = reverse("auditor:project", args=[project.pk])
    for user in (alice, vera):
        as_(client, user)
        assert "Transition matrix" in client.get(page).content.decode()
        assert client.get(matrix).status_code == 200
        assert client.get(compare).status_code == 200
        assert "policy-card" in client.get(dashboard).content.decode()
    as_(client, bob)
    html = client.get(page).content.decode()
    assert 'id="decisions-hidden"' in html and not DECISION_MARKS.search(html)
    assert not re.search(r"\b(rescue|harm)\b", html)
    assert client.get(matrix).status_code == 403
    assert client.get(compare).status_code == 403
    board = client.get(dashboard).content.decode()
    assert not DECISION_MARKS.search(board) and not re.search(r"\b(rescue|harm)\b", board)


def test_exports_are_refused_to_annotators(client, alice, bob, vera, project, run):
    export = export_create(project=project, format="csv", user=alice, enqueue=False)
    export_build(export_id=export.pk)
    api_list = reverse("exports:api-list")
    for user in (alice, vera):
        as_(client, user)
        assert client.get(reverse("exports:download", args=[export.pk])).status_code == 200
        assert client.get(reverse("exports:api-download", args=[export.pk])).status_code == 200
    r = as_(client, alice).post(
        api_list, {"project": project.name, "format": "csv"}, content_type="application/json"
    )
    assert r.status_code == 202

    as_(client, bob)
    for name in ("exports:download", "exports:api-download"):
        r = client.get(reverse(name, args=[export.pk]))
        assert r.status_code == 403 and b"twin" not in r.content
    r = client.post(
        api_list, {"project": project.name, "format": "csv"}, content_type="application/json"
    )
    assert r.status_code == 403 and "Annotators do not export" in r.json()["detail"]
    page = reverse("exports:list", args=[project.pk])
    r = client.post(page, {"format": "csv"})
    assert r.status_code == 403
    html = client.get(page).content.decode()
    assert "Annotators do not export" in html and "Build export" not in html
