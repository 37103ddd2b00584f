"""Results written by COPY (auditor.runs.store) are the policies' own results, value for
value, and a batch written twice (a redelivered chunk) keeps one copy."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.db import transaction
from django.db.models import Count

from auditor.models import AuditResult, AuditRun
from auditor.runs import summary as summary_module
from auditor.runs.calibration import label_events
from auditor.runs.models import DECISION_FIELDS
from auditor.runs.store import result_row, split_trajectory, store_results
from auditor.runs.summary import audit_run_summary
from auditor.runs.work import AuditorCache, with_env_name
from policies.stats.report import MATRIX_KEY, summarise_run
from policies.stats.twincheck_report import twincheck_report
from tests.audit.test_runs import LDB, SYCON, ingest_file, run_inline
from tests.real_data import real_file
from traces.models import Trace
from traces.selectors import load_events

pytestmark = pytest.mark.django_db

TAU = real_file("tau-bench/gpt-4o-airline.json")


def policy_results(run: AuditRun) -> dict[tuple[int, str], dict]:
    """Each trace audited again in this process with the run's own auditors:
    (trace id, policy) → (`PolicyResult.to_dict()`, the trace's stored events)."""
    auditors = AuditorCache(run)
    traces = list(with_env_name(Trace.objects.filter(audit_items__run=run)))
    events = load_events([t.pk for t in traces])
    out = {}
    for trace in traces:
        evs = label_events(events[trace.pk], auditors.executed)
        auditor = auditors.for_trace(trace.env_name, trace.model, evs)
        for name, res in auditor.audit(evs).items():
            out[(trace.pk, name)] = (res.to_dict(), events[trace.pk])
    return out


def expected_results(run: AuditRun) -> dict[tuple[int, str], dict]:
    """The policies' own results as the stored row's fields would hold them (stdlib JSON round
    trip: tuples become lists; the record naming its settings, which the run holds)."""
    out = {}
    for (trace_id, name), (d, events) in policy_results(run).items():
        row = result_row(run.pk, trace_id, name, d, events)
        out[(trace_id, name)] = json.loads(json.dumps(row))
    return out


# SYCON's replies are paragraphs: the commit rule applies to them (and writes trajectories)
# only when a paragraph counts as a short answer.
FREE_TEXT_COMMIT = {"commit": {"short_answer_words": 10_000}}


@pytest.mark.parametrize("path", [SYCON, LDB, TAU], ids=["sycon", "ldb", "tau"])
def test_stored_results_equal_the_policies_results(project, path):
    ingest_file(project, path)
    run = run_inline(project, environment="none", settings=FREE_TEXT_COMMIT)
    assert run.status == "done" and run.error_count == 0
    stored = {
        (r["trace_id"], r["policy"]): r
        for r in AuditResult.objects.filter(run=run).values(
            "run_id", "trace_id", "policy", "guarded_trajectory", "guarded_from", *DECISION_FIELDS
        )
    }
    expected = expected_results(run)
    assert len(stored) == len(expected) == run.traces_total * len(run.policies)
    assert stored == expected
    # The comparison covers the jsonb columns with content, not only empty ones.
    # (LDB's loops are replayed without a changed trajectory; the other two change some.)
    assert any(r["guarded_trajectory"] is not None for r in stored.values()) or path == LDB
    assert all(r["record"] for r in stored.values())
    # Each record as its policy wrote it, its settings in it.
    assert all(isinstance(r["record"]["settings"], dict) for r in stored.values())
    written = {k: json.loads(json.dumps(d["record"])) for k, (d, _) in policy_results(run).items()}
    assert {k: r["record"] for k, r in stored.items()} == written


@pytest.mark.parametrize("path", [SYCON, TAU], ids=["sycon", "tau"])
def test_the_full_guarded_trajectory_comes_back_from_the_stored_suffix(project, path):
    """Only the suffix from the divergence is stored; `AuditResult.full_trajectory` rebuilds,
    from the
    trace's events in the database, exactly the trajectory the policy returned — with the
    events read by its own query or handed in (the trace page holds them already)."""
    ingest_file(project, path)
    run = run_inline(project, environment="none", settings=FREE_TEXT_COMMIT)
    expected = policy_results(run)
    rebuilt = 0
    for result in AuditResult.objects.filter(run=run):
        d, events = expected[(result.trace_id, result.policy)]
        full = json.loads(json.dumps(d["guarded_trajectory"]))
        assert result.full_trajectory() == full
        assert result.full_trajectory(list(events)) == full
        if full is not None:
            assert result.guarded_from is not None
            assert len(result.guarded_trajectory) == len(full) - result.guarded_from
            rebuilt += result.guarded_from > 0
    assert rebuilt  # some suffixes start after a shared prefix: the rebuild is exercised


def test_split_trajectory_keeps_what_is_new():
    events = [{"a": 1}, {"b": 2}, {"c": 3}]
    assert split_trajectory(events, None) == (None, None)
    assert split_trajectory(events, [{"a": 1}, {"x": 0}]) == (1, [{"x": 0}])
    assert split_trajectory(events, [{"x": 0}, *events]) == (0, [{"x": 0}, *events])
    assert split_trajectory(events, events[:2]) == (2, [])
    assert split_trajectory(events, [*events, {"d": 4}]) == (3, [{"d": 4}])


def test_a_batch_stored_twice_keeps_the_first_copy(project):
    ingest_file(project, SYCON)
    run = run_inline(project, policies=["checklist"], environment="none")
    first = list(AuditResult.objects.filter(run=run).order_by("pk").values())
    rows = [
        {**result_row(run.pk, r["trace_id"], "checklist", r, []), "record": {"redelivered": True}}
        for r in first
    ]
    with transaction.atomic():  # as in the worker: the batch's transaction
        store_results(rows)  # every row conflicts: the COPY fails, the fallback keeps them
        store_results([])
    assert list(AuditResult.objects.filter(run=run).order_by("pk").values()) == first


@pytest.mark.parametrize("path", [TAU, SYCON], ids=["tau", "sycon"])
def test_run_summary_reads_the_records_as_the_jsonfield_does(project, path, monkeypatch):
    """The summary streams the results a page at a time, decodes records from text with
    orjson, and reads only the record keys the tables read (of the checklist's feedback events
    only the keys the rates read; the settings once): the tables equal `summarise_run` (and
    TwinCheck's report) over the whole rows as the JSONField decodes them, on real data with
    TwinCheck's report and with checklist feedback events — across page boundaries; each
    model's tables equal `summarise_run` over its rows."""
    ingest_file(project, path)
    run = run_inline(project, environment="none")
    page = 4  # pages of 4 results: more than two pages even in the samples' 11 τ-bench traces
    assert AuditResult.objects.filter(run=run, policy="vrr").count() > 2 * page
    monkeypatch.setattr(summary_module, "PAGE_SIZE", page)
    if path == TAU:
        assert run.summary["twincheck"]["report"]
    else:  # the projected feedback events are there and counted
        assert run.summary["checklist"]["checklist"]["feedback_events"] > 0
    categories = dict(Trace.objects.filter(audit_items__run=run).values_list("pk", "category"))
    models = dict(Trace.objects.filter(audit_items__run=run).values_list("pk", "model"))
    for policy in run.policies:
        rows = list(
            AuditResult.objects.filter(run=run, policy=policy)
            .order_by("trace_id")
            .values("trace_id", *DECISION_FIELDS)
        )
        results = [{**r, "policy": policy, "guarded_trajectory": None} for r in rows]
        cats = [categories.get(r["trace_id"]) or "—" for r in rows]
        n_boot = settings.TA_SUMMARY_BOOTSTRAP
        expected = summarise_run(results, cats, n_boot=n_boot)
        # the stored summary counts the queue the library lists, in its place
        # (RunSummary(queue_items=False))
        expected = {
            (k + "_n" if k == "annotation_queue" else k): (len(v) if k == "annotation_queue" else v)
            for k, v in expected.items()
        }
        if policy == "twincheck":
            expected["report"] = twincheck_report(results, cats, n_boot=n_boot)
        got = audit_run_summary(run)[policy]
        # the run page's transition-matrix counts, kept beside the tables: the ORM's own count
        matrix = got.pop(MATRIX_KEY)
        counted = (
            AuditResult.objects.filter(run=run, policy=policy)
            .exclude(transition=AuditResult.Transition.NOT_APPLICABLE)
            .values_list("actor_success", "guarded_success")
            .annotate(n=Count("id"))
            .order_by()
        )
        assert sorted(map(tuple, matrix), key=str) == sorted(counted, key=str)
        # the tables per model: `summarise_run` over each model's rows
        per_model, _ = got.pop("per_model"), got.pop("model_differences")
        assert sorted(per_model) == sorted({models[r["trace_id"]] or "—" for r in rows})
        for model, part in per_model.items():
            mine = [i for i, r in enumerate(rows) if (models[r["trace_id"]] or "—") == model]
            alone = summarise_run(
                [results[i] for i in mine], [cats[i] for i in mine], n_boot=n_boot
            )
            assert json.dumps(part) == json.dumps({k: alone[k] for k in part})
        assert json.dumps(got) == json.dumps(expected)  # key order too: the stored bytes


def test_results_are_written_only_through_the_store():
    """Every write of `AuditResult` rows goes through auditor.runs.store — `store_results` for a
    batch, `change_results` for a change, which remakes the run's summary — so a run's summary
    always holds its results. The re-import of an export makes a whole run anew and summarises
    it at its end."""
    import re

    from tests.conftest import REPO

    calls = r"(?:\.\w+\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\))*"
    writes = re.compile(
        r"AuditResult\.objects" + calls + r"\.(?:update|create|bulk_create|get_or_create"
        r"|update_or_create|bulk_update)\("
    )
    allowed = {"auditor/runs/store.py", "auditor/exports/reimport.py"}
    writers = set()
    for path in (REPO / "auditor").rglob("*.py"):
        name = path.relative_to(REPO).as_posix()
        if "/migrations/" in name:
            continue
        if writes.search(re.sub(r"\s+", "", path.read_text())):
            writers.add(name)
    assert writers == allowed
