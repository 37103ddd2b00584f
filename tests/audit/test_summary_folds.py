"""A finished run's summary merged from its batches' folds (auditor.runs.folds) is the summary
read from its stored rows; folds that cannot give it exactly are not used."""

from __future__ import annotations

import json
import os
import pickle

import pytest
from django.test import override_settings

from auditor.annotation import flowback
from auditor.models import AuditItem, AuditRun, SummaryFold
from auditor.runs import folds as folds_module
from auditor.runs import work
from auditor.runs.folds import summary_from_folds
from auditor.runs.summary import audit_run_summary
from policies.run_fold import PolicyFold, dumps
from tests.audit.test_result_store import TAU
from tests.audit.test_runs import LDB, SYCON, ingest_file, run_inline

pytestmark = pytest.mark.django_db


def _as_stored(summary: dict) -> dict:
    """A summary as the run's JSON column gives it back."""
    return json.loads(json.dumps(summary))


@pytest.fixture
def real_project(project):  # type: ignore[no-untyped-def]
    for path in (SYCON, LDB, TAU):
        ingest_file(project, path)
    return project


def test_a_run_summarised_from_its_folds_equals_the_summary_of_its_rows(real_project):
    run = run_inline(real_project, environment="auto")
    assert run.status == "done" and run.error_count == 0 and run.traces_done == 564
    assert run.timings["summary_from"] == "folds"
    assert not SummaryFold.objects.filter(run=run).exists()  # merged, then dropped
    assert run.summary == _as_stored(audit_run_summary(run))
    assert run.summary["twincheck"]["report"]["n_traces"] == 564
    assert run.summary["checklist"]["checklist"]["feedback_events"] > 0


def test_with_folds_off_the_summary_reads_the_rows(real_project):
    with override_settings(TA_SUMMARY_FOLDS=False):
        run = run_inline(real_project, environment="auto", policies=["checklist", "vrr"])
    assert run.timings["summary_from"] == "rows"
    assert not SummaryFold.objects.filter(run=run).exists()


@pytest.fixture
def kept_folds(real_project, monkeypatch):  # type: ignore[no-untyped-def]
    """A finished run whose folds were kept, and its done-trace count."""
    monkeypatch.setattr(work, "discard_folds", lambda run_id: None)
    run = run_inline(real_project, environment="auto", policies=["twincheck", "commit"])
    assert run.timings["summary_from"] == "folds"
    done = AuditItem.objects.filter(run=run, status="done").count()
    assert SummaryFold.objects.filter(run=run).count() == -(-done // work.BATCH_TRACES)
    assert _as_stored(summary_from_folds(run, done)) == run.summary
    return run, done


def test_folds_missing_a_batch_are_not_used(kept_folds):
    run, done = kept_folds
    SummaryFold.objects.filter(run=run).order_by("first_trace")[3].delete()
    assert summary_from_folds(run, done) is None


def test_folds_of_other_code_are_not_used(kept_folds):
    run, done = kept_folds
    SummaryFold.objects.filter(pk=SummaryFold.objects.filter(run=run).first().pk).update(
        version="an-older-release"
    )
    assert summary_from_folds(run, done) is None


def test_folds_out_of_trace_order_are_not_used(kept_folds):
    """A retried trace's fold amid an earlier batch's traces: merged, the first occurrences of
    its counts would move, and with them the bootstrap's draws."""
    run, done = kept_folds
    first, second = SummaryFold.objects.filter(run=run).order_by("first_trace")[:2]
    SummaryFold.objects.filter(pk=second.pk).update(first_trace=first.last_trace)
    assert summary_from_folds(run, done) is None


def test_folds_covering_other_traces_than_the_done_ones_are_not_used(kept_folds):
    run, done = kept_folds
    assert summary_from_folds(run, done + 1) is None


class _Payload:
    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, ("touch should-not-exist",))


def test_a_tampered_fold_is_refused_and_the_rows_are_read(kept_folds, tmp_path, monkeypatch):
    run, done = kept_folds
    monkeypatch.chdir(tmp_path)
    SummaryFold.objects.filter(pk=SummaryFold.objects.filter(run=run).last().pk).update(
        state=pickle.dumps({"commit": _Payload()})
    )
    assert summary_from_folds(run, done) is None
    assert not (tmp_path / "should-not-exist").exists()


def test_a_fold_of_another_policy_under_a_policys_name_is_not_merged(kept_folds):
    run, done = kept_folds
    SummaryFold.objects.filter(pk=SummaryFold.objects.filter(run=run).last().pk).update(
        state=dumps({"commit": PolicyFold("vrr")})
    )
    assert summary_from_folds(run, done) is None


def test_a_human_verdict_discards_the_runs_folds(kept_folds):
    """A result changed under the batches (annotation flow-back, re-replay): the run's summary
    must come from its rows, so its folds go."""
    run, _ = kept_folds
    flowback._resummarise(run.pk)
    assert not SummaryFold.objects.filter(run=run).exists()
    assert AuditRun.objects.get(pk=run.pk).summary == _as_stored(audit_run_summary(run))


def test_a_batch_a_redelivered_copy_finished_first_stores_no_fold(real_project):
    """Its traces were taken out of pending by the other copy, whose fold counts them."""
    run = run_inline(real_project, environment="none", policies=["commit"])
    trace_id = run.items.first().trace_id
    batch = work.Batch(rows=[], done=[trace_id], failed=[], categories={})
    assert work._store_batch(run.pk, batch) == 0
    assert not folds_module.SummaryFold.objects.filter(run=run).exists()
    # the same batch taking its trace out of pending itself stores its fold
    AuditItem.objects.filter(run=run, trace_id=trace_id).update(status="pending")
    assert work._store_batch(run.pk, batch) == 1
    assert folds_module.SummaryFold.objects.filter(run=run).count() == 1


def _unexpected(*args, **kwargs):  # type: ignore[no-untyped-def]
    raise AssertionError("summarised again")


def test_a_finished_run_is_not_summarised_again(real_project, monkeypatch):
    """A chunk redelivered after the run finished finds nothing pending: no summary is made."""
    run = run_inline(real_project, environment="none", policies=["commit"])
    monkeypatch.setattr(work, "summary_from_folds", _unexpected)
    monkeypatch.setattr(work, "audit_run_summary", _unexpected)
    assert work.finish_if_complete(run.pk) is False


def test_the_finisher_that_lost_the_race_does_not_read_the_rows(real_project, monkeypatch):
    """Two chunks finish at once; the other stores the summary and drops the folds while this
    one merges them: this one stops instead of reading every row back."""
    run = run_inline(real_project, environment="none", policies=["commit"])
    AuditRun.objects.filter(pk=run.pk).update(status="running")

    def the_other_one_won(run, done):  # type: ignore[no-untyped-def]
        AuditRun.objects.filter(pk=run.pk).update(status="done")
        return None

    monkeypatch.setattr(work, "summary_from_folds", the_other_one_won)
    monkeypatch.setattr(work, "audit_run_summary", _unexpected)
    assert work.finish_if_complete(run.pk) is False
