"""Statistics that never hide an unknown, end to end on the real database: a run
whose guarded trajectories diverged exactly where the outcome is unknown (hidden harms) must not
show a CI of [0, 0] on any page, in `audit --json` or in an export; n_unknown, the bounds and
not-applicable reasons are shown everywhere a Δ is."""

from __future__ import annotations

import re

import orjson
import pytest
from django.urls import reverse

from auditor.annotation.models import AnnotationItem
from auditor.annotation.services import queue_create
from auditor.exports.services import export_build, export_create
from auditor.models import AuditItem, AuditResult, AuditRun
from auditor.runs.stats_display import delta_display, delta_text
from auditor.runs.summary import audit_run_counts, audit_run_summary
from traces.models import Trace, Upload

pytestmark = pytest.mark.django_db

# [0, 0] however a page or JSON might print it: 0, 0.0, 0.000, -0.000, with or without spaces.
ZERO_CI = re.compile(r"\[\s*[-+]?0(\.0+)?\s*,\s*[-+]?0(\.0+)?\s*\]")
NA_REASON = "no per-claim confidence"


def _results(run, traces):  # type: ignore[no-untyped-def]
    """6 known "same" (the guard kept the actor's trajectory), 4 hidden harms (the guard
    replaced a reply of a successful actor, outcome unknown) and 2 not applicable."""
    rows = []
    for i, t in enumerate(traces):
        AuditItem.objects.create(run=run, trace=t, status=AuditItem.Status.DONE)
        if i < 6:
            a, g, tr, cont, rec = True, True, "same", "exact", {}
        elif i < 10:
            a, g, tr, cont = True, None, "unknown", "replaced"
            rec = {"unknown_reason": "replacement reply not labelled"}
        else:
            a, g, tr, cont = None, None, "not_applicable", "exact"
            rec = {"not_applicable": NA_REASON}
        rows.append(
            AuditResult(
                run=run,
                trace=t,
                policy="checklist",
                applied=i >= 6,
                actor_success=a,
                guarded_success=g,
                transition=tr,
                continuation=cont,
                record=rec,
            )  # fmt: skip
        )
    AuditResult.objects.bulk_create(rows)


def _done_run(project, traces, label):  # type: ignore[no-untyped-def]
    run = AuditRun.objects.create(
        project=project, label=label, policies=["checklist"], status=AuditRun.Status.DONE,
        traces_total=len(traces), traces_done=len(traces),
    )  # fmt: skip
    _results(run, traces)
    run.summary = audit_run_summary(run)
    run.save(update_fields=["summary"])
    return run


@pytest.fixture
def hidden_harms(project):  # type: ignore[no-untyped-def]
    up = Upload.objects.create(
        project=project, filename="h.jsonl", size=1, content_hash="h", source="cli",
        status=Upload.Status.DONE,
    )  # fmt: skip
    traces = [
        Trace.objects.create(project=project, upload=up, external_id=f"h{i}", category="c")
        for i in range(12)
    ]
    return _done_run(project, traces, "a"), _done_run(project, traces, "b")


def _no_zero_ci(text: str) -> None:
    assert not ZERO_CI.search(text), ZERO_CI.search(text)


def test_the_stored_summary_has_bounds_and_no_degenerate_interval(hidden_harms):
    run, _ = hidden_harms
    o = run.summary["checklist"]["overall"]
    assert o["n_unknown"] == 4 and o["n_not_applicable"] == 2
    assert o["ci_known"] is None and o["ci_known_degenerate"] is True  # all known are "same"
    assert o["bounds"] == [-0.4, 0.0]  # every unknown a harm (4/10) … or the same
    d = delta_display(o)
    assert d["ci"][0] < 0 and d["ci_kind"] == "with_unknowns" and d["ci_known_withheld"]
    assert d["significance"] in {"sig-neg", "nonsig"}
    assert d["guarded"]["text"] == "6 of the 6 with a known outcome"
    assert d["actor"]["text"] == "10 of the 10 with a known outcome"
    assert run.summary["checklist"]["not_applicable"] == {NA_REASON: 2}


def test_no_page_shows_a_zero_interval(client, alice, project, hidden_harms):
    a, b = hidden_harms
    client.force_login(alice)
    pages = {
        "run": reverse("auditor:run", args=[a.pk]),
        "compare": reverse("auditor:run-compare") + f"?a={a.pk}&b={b.pk}",
        "dashboard": reverse("auditor:project", args=[project.pk]),
    }
    for name, url in pages.items():
        r = client.get(url)
        assert r.status_code == 200, name
        body = r.content.decode()
        _no_zero_ci(body)
        # the unknowns beside the Δ (the headline's count, a table's unknown column or "· 4
        # unknown") and the bounds ("bounds" or the tables' "worst to best case")
        assert 'data-n-unknown="4"' in body or "· 4 unknown" in body or ">unknown<" in body, name
        assert "bounds" in body or "worst to best case (unknowns all harms" in body, name
        assert "n_unknown" not in body, name  # no raw field name on a page
        assert "[-0.400, 0.000]" in body, name  # the bounds, printed
    run_page = client.get(pages["run"]).content.decode()
    assert f"{NA_REASON}: 2" in run_page and "not applicable" in run_page
    assert "transition=not_applicable" in run_page  # the filter link to those traces
    assert "withheld (it would read as certainty while unknowns exist)" in run_page
    assert "6 of the 6 with a known outcome" in run_page


def test_audit_json_and_its_text_show_no_zero_interval(hidden_harms):
    run, _ = hidden_harms
    counts = audit_run_counts(run)
    text = orjson.dumps(counts).decode()
    _no_zero_ci(text)
    c = counts["policies"]["checklist"]
    assert c["guarded_success"] == 6 and c["guarded_known"] == 6 and c["actor_known"] == 10
    stats = c["statistics"]
    assert stats["n_unknown"] == 4 and stats["bounds"] == [-0.4, 0.0]
    assert stats["not_applicable_reasons"] == {NA_REASON: 2}
    assert c["paper_table"]  # the checklist paper's table travels with the counts
    line = delta_text(stats)
    _no_zero_ci(line)
    assert "withheld" in line and "n_unknown 4" in line


def test_export_manifest_shows_no_zero_interval(hidden_harms, project):
    run, _ = hidden_harms
    export = export_create(project=project, format="jsonl", filters={"runs": [run.pk]},
                           enqueue=False)  # fmt: skip
    built = export_build(export_id=export.pk)
    assert built is not None and built.status == "done"
    stats = built.manifest["runs"][str(run.pk)]["statistics"]["checklist"]
    assert stats["n_unknown"] == 4 and stats["bounds"] == [-0.4, 0.0]
    _no_zero_ci(orjson.dumps(built.manifest).decode())


def test_an_old_summary_with_a_zero_interval_is_withheld_when_unknowns_exist():
    old = {"delta": 0.0, "ci": [0.0, 0.0], "transitions": {"same": 5, "unknown": 3}}
    d = delta_display(old)
    assert d["ci"] is None and d["ci_known"] is None and d["ci_known_withheld"]
    assert d["n_unknown"] == 3 and d["significance"] == "none"
    # without unknowns a [0, 0] interval is honest and shown
    assert delta_display({"delta": 0.0, "ci": [0.0, 0.0], "transitions": {"same": 5}})["ci"]


def test_an_outcome_queue_holds_every_unknown_outcome(hidden_harms):
    run, _ = hidden_harms
    queue = queue_create(run=run, name="unknowns", kinds=["outcome"])
    items = AnnotationItem.objects.filter(queue=queue, kind="outcome")
    unknown = set(
        AuditResult.objects.filter(run=run, transition="unknown").values_list("id", flat=True)
    )
    assert {i.result_id for i in items} == unknown and len(unknown) == 4
    assert all(i.payload["needs"] == "guarded outcome" for i in items)
    assert all(i.payload["reason"] == "replacement reply not labelled" for i in items)


def test_the_traces_list_filters_not_applicable_apart_from_same(
    client, alice, project, hidden_harms
):
    run, _ = hidden_harms
    client.force_login(alice)
    url = reverse("auditor:trace-list", args=[project.pk])
    na = client.get(url, {"run": run.pk, "policy": "checklist", "transition": "not_applicable"})
    same = client.get(url, {"run": run.pk, "policy": "checklist", "transition": "same"})
    assert na.status_code == same.status_code == 200
    na_ids = set(re.findall(r">(h\d+)<", na.content.decode()))
    same_ids = set(re.findall(r">(h\d+)<", same.content.decode()))
    assert na_ids == {"h10", "h11"} and same_ids == {f"h{i}" for i in range(6)}
    assert f"checklist: not_applicable ({NA_REASON})" in na.content.decode()  # the reason


@pytest.mark.parametrize(
    ("delta", "ci", "colour"),
    [
        (0.3, [-0.1, 0.5], "nonsig"),  # a positive Δ whose interval holds 0 is not green
        (0.3, [0.1, 0.5], "sig-pos"),
        (-0.05, [-0.2, -0.01], "sig-neg"),  # a small Δ whose interval excludes 0 is red
        (0.0, None, "none"),
    ],
)
def test_delta_is_coloured_by_its_interval_not_its_sign(delta, ci, colour):
    o = {"delta_known": delta, "ci": ci, "ci_kind": "known_pairs", "n_unknown": 0}
    assert delta_display(o)["significance"] == colour


def test_the_run_page_colours_by_the_interval(client, alice, hidden_harms):
    run, _ = hidden_harms
    client.force_login(alice)
    body = client.get(reverse("auditor:run", args=[run.pk])).content.decode()
    d = delta_display(run.summary["checklist"]["overall"])
    assert f'data-significance="{d["significance"]}"' in body
    assert d["significance"] != "none"


def test_a_verdict_on_an_unknown_actor_outcome_sets_the_actor_side(client, project, alice):
    """The queue asks for the actor's outcome where only it is unknown; the verdict settles
    the actor's side (the guarded one stays the machine's) and undo restores both."""
    from auditor.annotation.services import item_claim, verdict_submit, verdict_undo

    up = Upload.objects.create(
        project=project, filename="a.jsonl", size=1, content_hash="a", source="cli",
        status=Upload.Status.DONE,
    )  # fmt: skip
    t = Trace.objects.create(project=project, upload=up, external_id="a0")
    run = AuditRun.objects.create(
        project=project, policies=["vrr"], status=AuditRun.Status.DONE, traces_total=1,
        traces_done=1,
    )  # fmt: skip
    AuditItem.objects.create(run=run, trace=t, status=AuditItem.Status.DONE)
    result = AuditResult.objects.create(
        run=run, trace=t, policy="vrr", applied=True, actor_success=None, guarded_success=True,
        transition="unknown", continuation="replaced", record={},
    )  # fmt: skip
    queue = queue_create(run=run, name="q", kinds=["outcome"], k=1)
    [item] = AnnotationItem.objects.filter(queue=queue)
    assert item.payload["needs"] == "actor outcome"
    client.force_login(alice)
    page = client.get(reverse("annotate:next", args=[queue.pk])).content.decode()
    assert 'data-needs="actor"' in page  # the page says which trajectory is asked about
    claimed = item_claim(queue=queue, user=alice)
    assert claimed is not None and claimed.pk == item.pk
    verdict = verdict_submit(item_id=item.pk, user=alice, label="failure")
    result.refresh_from_db()
    assert (result.actor_success, result.guarded_success, result.transition) == (
        False, True, "rescue",
    )  # fmt: skip
    verdict_undo(verdict_id=verdict.pk, user=alice)
    result.refresh_from_db()
    assert (result.actor_success, result.guarded_success, result.transition) == (
        None, True, "unknown",
    )  # fmt: skip
