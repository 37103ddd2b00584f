"""Audit runs in-process (the same functions the workers run), on real data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.models import AuditItem, AuditResult, AuditRun, Calibration
from auditor.runs.queueing import chunk_size
from auditor.runs.services import (
    AuditRejected,
    audit_run_create,
    audit_run_retry_errors,
    audit_run_start,
    parse_set_options,
)
from auditor.runs.summary import audit_run_counts
from auditor.runs.work import audit_chunk_process
from tests.real_data import count_records, need_full, real_file
from traces.models import Upload
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db

SYCON = real_file("sycon-bench/false_presuppositions_gpt-4o_prompt0.jsonl")
LDB = real_file("ldb/humaneval_reflexion_gpt-3.5-turbo-0613.jsonl")
N = count_records(SYCON)  # 200 in the full file
N_LDB = count_records(LDB)  # 164 in the full file


def ingest_file(project, path: Path) -> Upload:  # type: ignore[no-untyped-def]
    if not path.exists():
        pytest.fail(f"real data file missing: {path}")
    with path.open("rb") as fh:
        upload, _ = upload_create(
            project=project, fileobj=fh, filename=path.name, source="cli", enqueue=False
        )
    upload = upload_process(upload_id=upload.pk)
    assert upload.status == "done" and upload.error_count == 0, upload.errors[:3]
    return upload


def run_inline(project, **kwargs) -> AuditRun:  # type: ignore[no-untyped-def]
    run = audit_run_create(project=project, enqueue=False, **kwargs)
    audit_run_start(run_id=run.pk, inline=True)
    run.refresh_from_db()
    return run


def test_sycon_checklist_run_matches_counts_from_the_raw_file(project):
    ingest_file(project, SYCON)
    run = run_inline(project, policies=["checklist"], environment="none")
    assert run.status == "done" and run.error_count == 0
    # Independently, from the raw file: every pushback defends a false presupposition, so an
    # answer that identified it (label 1) and then stopped doing so is a false reversal.
    records = [json.loads(x) for x in SYCON.read_text().splitlines() if x.strip()]
    false_reversals = 0
    for rec in records:
        labels = [
            str(t["judge_identifies_false_presupposition"]).strip() == "1" for t in rec["turns"]
        ]
        false_reversals += sum(1 for a, b in zip(labels, labels[1:], strict=False) if a and not b)
    summary = run.summary["checklist"]
    assert summary["n_traces"] == len(records) == run.traces_total
    assert summary["checklist"]["actor_all_events"]["false_reversals"] == false_reversals > 0
    # SYCON records carry no per-claim confidence: without a model eliciting one, the rule has
    # nothing to judge on any trace — not applicable, never "same"
    assert summary["not_applicable"] == {"no per-claim confidence": len(records)}
    na = AuditResult.objects.filter(run=run, transition="not_applicable")
    assert na.count() == len(records)
    assert summary["overall"]["n_applicable"] == 0 and summary["overall"]["ci"] is None


def test_ldb_vrr_run_calibrates_from_visible_tests(project):
    ingest_file(project, LDB)
    run = run_inline(project, policies=["vrr"], environment="none")
    assert run.status == "done" and run.error_count == 0
    records = [json.loads(x) for x in LDB.read_text().splitlines() if x.strip()]
    # One vote observation per implementation (a round's visible tests), where tests ran.
    rounds = sum(len(r["implementations"]) for r in records if r.get("given_tests"))
    [cal] = Calibration.objects.filter(run=run)
    assert cal.traces == len(records) and cal.observations == rounds
    assert 0 <= cal.params["params"]["rho0"] <= 1 and 0 <= cal.params["params"]["rho1"] <= 1
    assert (
        cal.params["intervals"]["rho0"][0]
        <= cal.params["params"]["rho0"]
        <= cal.params["intervals"]["rho0"][1]
    )
    solved = sum(1 for r in records if r["is_solved"])
    results = AuditResult.objects.filter(run=run, policy="vrr")
    assert results.count() == len(records)
    assert results.filter(actor_success=True).count() == solved


def test_calibration_read_in_parts_equals_the_whole_groups(project, settings):
    """run_calibrate keeps each group's observations, not its events, a part at a time: the
    parameters, intervals and bootstrap samples equal those calibrated from all the group's
    traces at once (each trace keeps its loop index, which the bootstrap resamples by)."""
    from auditor.runs.calibration import verifier_of
    from policies.jsonsafe import json_safe
    from policies.trace import Trace as PTrace
    from policies.vrr.calibration import calibrate, observations_from_traces
    from traces.models import Trace
    from traces.selectors import load_events

    ingest_file(project, LDB)
    run = run_inline(project, policies=["vrr"], environment="none")
    [cal] = Calibration.objects.filter(run=run)
    ids = list(Trace.objects.filter(project=project).order_by("id").values_list("id", flat=True))
    events = load_events(ids)
    group = [e for e in events.values() if verifier_of(e) == cal.verifier and e]
    obs, transitions = observations_from_traces([PTrace.from_events(e) for e in group])
    whole = calibrate(obs, transitions, n_boot=settings.TA_CALIBRATION_BOOTSTRAP, seed=0)
    expected = json_safe({**whole.to_dict(), "samples": [x.to_dict() for x in whole.samples]})
    assert cal.traces == len(group) and cal.observations == whole.n_observations
    stored = {k: v for k, v in cal.params.items() if k != "not_applicable"}  # run_calibrate's note
    assert stored == json.loads(json.dumps(expected))


def test_rerunning_a_finished_run_adds_nothing(project):
    ingest_file(project, SYCON)
    run = run_inline(project, policies=["checklist", "commit"], environment="none")
    before = (AuditResult.objects.count(), AuditItem.objects.count())
    assert before == (2 * N, N)
    assert audit_run_start(run_id=run.pk, inline=True) is None  # already claimed
    ids = list(run.items.values_list("trace_id", flat=True))
    assert audit_chunk_process(run_id=run.pk, trace_ids=ids) == 0  # a redelivered chunk
    AuditRun.objects.filter(pk=run.pk).update(status="running")  # even if it were running
    AuditItem.objects.filter(run=run).update(status="pending")  # and nothing marked done
    audit_chunk_process(run_id=run.pk, trace_ids=ids)
    assert (AuditResult.objects.count(), AuditItem.objects.count()) == before


def test_a_failing_trace_is_recorded_and_can_be_retried(project, monkeypatch):
    ingest_file(project, SYCON)
    from policies import Auditor

    real = Auditor.audit
    victim = "pushback:gpt-4o:sycon_fp_gpt-4o_p0_3"  # the run (model) names the id

    def flaky(self, events):  # type: ignore[no-untyped-def]
        if events and events[0]["trace_id"] == victim:
            raise RuntimeError("simulated failure")
        return real(self, events)

    monkeypatch.setattr(Auditor, "audit", flaky)
    run = run_inline(project, policies=["checklist"], environment="none")
    assert run.status == "done" and run.error_count == 1 and run.traces_done == N
    item = run.items.get(status="error")
    assert item.trace.external_id == victim and "simulated failure" in item.error
    monkeypatch.setattr(Auditor, "audit", real)
    assert audit_run_retry_errors(run=run) == 1
    run.refresh_from_db()
    assert run.status == "running"
    assert run.traces_done == N - 1  # the retried trace is pending again
    audit_chunk_process(run_id=run.pk, trace_ids=[item.trace_id])
    run.refresh_from_db()
    assert (run.status, run.error_count, run.traces_done) == ("done", 0, N)
    assert AuditResult.objects.filter(run=run).count() == N


def test_the_done_count_moves_once_per_batch_with_the_items_done(project):
    """The run page's done/total comes from traces_done, which each batch moves by the items it
    finished (no count of the run's items per batch); the progress callback sees the same."""
    need_full()  # four batches of 50 need the full file's 200 traces
    ingest_file(project, SYCON)
    run = audit_run_create(project=project, policies=["commit"], environment="none", enqueue=False)
    seen = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total, AuditRun.objects.get(pk=run.pk).traces_done))

    audit_run_start(run_id=run.pk, inline=True, progress=progress)
    assert seen == [(d, 200, d) for d in range(50, 201, 50)]  # one call per 50-trace batch
    run.refresh_from_db()
    assert (run.status, run.traces_done) == ("done", 200)
    # a redelivered chunk finds nothing pending and moves nothing
    audit_chunk_process(run_id=run.pk, trace_ids=list(run.items.values_list("trace_id", flat=True)))
    run.refresh_from_db()
    assert run.traces_done == 200


@pytest.mark.parametrize("flag", [True, False])
def test_inline_cli_shows_a_progress_bar_when_asked(project, capsys, flag):
    """`audit --inline --progress` draws a bar on stderr; without the flag and with stderr not
    a terminal (as here), nothing is drawn — stdout keeps the report either way."""
    from django.core.management import call_command

    ingest_file(project, SYCON)
    args = ["audit", "--project", project.name, "--policies", "commit", "--inline"]
    call_command(*args, *(["--progress"] if flag else []))
    out, err = capsys.readouterr()
    assert f"{N} traces, 0 errors" in out
    assert (f"{N}/{N}" in err) is flag and f"{N}/{N}" not in out


def test_settings_are_checked_before_the_run_starts(project):
    with pytest.raises(AuditRejected, match="unknown policies"):
        audit_run_create(project=project, policies=["twincheck", "magic"], enqueue=False)
    with pytest.raises(AuditRejected, match="invalid settings"):
        audit_run_create(project=project, settings={"checklist": {"thetta": 0.4}}, enqueue=False)
    with pytest.raises(AuditRejected, match="unknown judge"):
        audit_run_create(project=project, judge="oracle", enqueue=False)
    assert AuditRun.objects.count() == 0


def test_set_options_parse_values_as_json():
    per_policy, options = parse_set_options(
        [
            "twincheck.min_confidence=0.8",
            "checklist.schedule=on_demand",
            "judge=recorded",
            "model=gpt-4o",
        ]
    )
    assert per_policy == {
        "twincheck": {"min_confidence": 0.8},
        "checklist": {"schedule": "on_demand"},
    }
    assert options == {"judge": "recorded", "filter.model": "gpt-4o"}
    with pytest.raises(AuditRejected, match="expected KEY=VALUE"):
        parse_set_options(["nonsense"])


def test_settings_are_recorded_with_every_decision(project):
    ingest_file(project, SYCON)
    run = run_inline(
        project, policies=["checklist"], environment="none", settings={"checklist": {"theta": 0.7}}
    )
    records = [r.record for r in AuditResult.objects.filter(run=run)]
    assert records and all(r["settings"]["theta"] == 0.7 for r in records)


def test_the_cli_counts_list_policies_in_the_runs_order(project):
    """`audit --json` lists the policies as the run names them: the counts' GROUP BY comes back
    in the order of PostgreSQL's plan, which is no order (two runs, opposite orders, so a fixed
    order of the query cannot pass both)."""
    ingest_file(project, SYCON)
    for order in (
        ["twincheck", "checklist", "vrr", "commit"],
        ["commit", "vrr", "checklist", "twincheck"],
    ):
        run = run_inline(project, policies=order, environment="none")
        assert list(audit_run_counts(run)["policies"]) == order


def test_a_runs_chunks_grow_with_it_unless_a_size_is_set(settings):
    """Sixteen chunks per run, of 250 to 1,000 traces (a chunk's first read and last write are
    not overlapped with auditing, so small chunks wait on the database), 100 with a model; a
    set size wins."""
    settings.TA_AUDIT_CHUNK_TRACES = 0
    assert [chunk_size(n) for n in (1, 164, 1600, 4000, 8000, 16_000, 100_000)] == [
        250, 250, 250, 250, 500, 1000, 1000,
    ]  # fmt: skip
    # with a model, traces wait on calls: a long task would be redelivered and call again
    assert chunk_size(100_000, model=True) == 100
    assert chunk_size(164, model=True) == 100
    settings.TA_AUDIT_CHUNK_TRACES = 4
    assert chunk_size(4000) == 4 and chunk_size(4000, model=True) == 4


def test_a_replayed_trace_keeps_its_new_settings_and_the_summary_follows(project):
    """A re-replay changes results after their batch (`auditor.runs.store.change_results`):
    the new record holds the settings it was decided with, and the run's summary is made
    again from the rows in the same transaction."""
    from django.db import transaction

    from auditor.runs.rereplay import rereplay_trace
    from auditor.runs.summary import audit_run_summary
    from policies.heuristic_judge import HeuristicJudge

    ingest_file(project, LDB)
    run = run_inline(project, policies=["twincheck"], environment="none")
    AuditRun.objects.filter(pk=run.pk).update(settings={"twincheck": {"min_margin": 3.0}})
    run.refresh_from_db()
    result = AuditResult.objects.filter(run=run).first()
    with transaction.atomic():
        rereplay_trace(run=run, trace_id=result.trace_id, judge=HeuristicJudge())
    result.refresh_from_db()
    run.refresh_from_db()
    assert result.record["settings"]["min_margin"] == 3.0
    assert run.summary == json.loads(json.dumps(audit_run_summary(run)))


def test_a_chunk_redelivered_after_the_run_finished_changes_nothing(project, monkeypatch):
    """It finds nothing pending: no result is written and no summary is made again."""
    from auditor.runs import work

    ingest_file(project, SYCON)
    run = run_inline(project, policies=["commit"], environment="none")
    before = (run.summary, AuditResult.objects.filter(run=run).count())

    def unexpected(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("summarised again")

    monkeypatch.setattr(work, "audit_run_summary", unexpected)
    ids = list(run.items.values_list("trace_id", flat=True))
    assert work.audit_chunk_process(run_id=run.pk, trace_ids=ids) == 0
    assert not work.finish_if_complete(run.pk)
    run.refresh_from_db()
    assert (run.summary, AuditResult.objects.filter(run=run).count()) == before
