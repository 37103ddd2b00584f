"""A run's start makes its items, calibrates VRR and then queues every trace; traces with votes
are never audited before the calibration is stored — also when the start dies calibrating,
which the sweep repairs (auditor.runs.services)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from auditor.models import AuditItem, AuditResult, AuditRun, Calibration
from auditor.runs import queueing, services
from auditor.runs.models import DECISION_FIELDS
from auditor.runs.services import audit_run_create, audit_run_start, audit_runs_resume_stale
from auditor.runs.work import audit_chunk_process
from policies import POLICIES
from tests.audit.test_runs import LDB, N_LDB, SYCON, N, ingest_file, run_inline
from traces.models import Trace

# transactional: the start's queueing happens at its commits, as in a worker
pytestmark = pytest.mark.django_db(transaction=True)

FIELDS = (*DECISION_FIELDS, "guarded_from", "guarded_trajectory")


def results(run: AuditRun) -> dict[tuple[int, str], tuple]:
    rows = AuditResult.objects.filter(run=run).values("trace_id", "policy", *FIELDS)
    return {(r["trace_id"], r["policy"]): tuple(r[f] for f in FIELDS) for r in rows}


@pytest.fixture
def mixed(project):  # type: ignore[no-untyped-def]
    """SYCON pushback traces without votes (200), LDB repair loops with them (164)."""
    ingest_file(project, SYCON)
    upload = ingest_file(project, LDB)
    loops = set(Trace.objects.filter(upload=upload).values_list("pk", flat=True))
    assert len(loops) == N_LDB
    return project, loops


def queue_recorder(monkeypatch) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """The chunks the services queue, each with whether its run was calibrated then."""
    queued: list[dict[str, Any]] = []

    def record(run: AuditRun, trace_ids) -> int:  # type: ignore[no-untyped-def]
        fresh = AuditRun.objects.get(pk=run.pk)
        queued.append(
            {
                "ids": list(trace_ids),
                "calibrated": fresh.calibrated_at is not None,
                "calibrations": Calibration.objects.filter(run=run).count(),
            }
        )
        return 1

    monkeypatch.setattr(queueing, "enqueue_chunks", record)
    monkeypatch.setattr(services, "enqueue_chunks", record)
    return queued


def start_killed_in(monkeypatch, project, name: str, dying) -> AuditRun:  # type: ignore[no-untyped-def]
    """A run whose start died in ``services.<name>``, replaced by ``dying`` (which raises, as a
    killed worker stops); every patch is undone after it."""
    monkeypatch.setattr(services, name, dying)
    run = audit_run_create(project=project, environment="none", enqueue=False)
    with pytest.raises(RuntimeError, match="worker killed"):
        audit_run_start(run_id=run.pk)
    monkeypatch.undo()
    return run


def test_the_start_calibrates_then_queues_every_trace(mixed, monkeypatch):
    project, loops = mixed
    reference = run_inline(project, environment="none")
    queued = queue_recorder(monkeypatch)
    run = audit_run_create(project=project, environment="none", enqueue=False)
    audit_run_start(run_id=run.pk)
    ids = sorted(run.items.values_list("trace_id", flat=True))
    assert [(q["ids"], q["calibrated"], q["calibrations"]) for q in queued] == [(ids, True, 1)]
    audit_chunk_process(run_id=run.pk, trace_ids=queued[0]["ids"])
    run.refresh_from_db()
    assert (run.status, run.traces_done, run.error_count) == ("done", N + N_LDB, 0)
    assert results(run) == results(reference) and run.summary == reference.summary


def test_a_start_that_died_calibrating_is_calibrated_by_the_sweep(mixed, monkeypatch):
    project, loops = mixed
    reference = run_inline(project, environment="none")
    queued = queue_recorder(monkeypatch)

    def dies(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("worker killed")

    run = start_killed_in(monkeypatch, project, "run_calibrate", dies)
    queued = queue_recorder(monkeypatch)
    # every trace handed to a chunk — as the sweep would before this repair: the loops must
    # not be audited without their calibration, so they stay pending
    ids = sorted(run.items.values_list("trace_id", flat=True))
    audit_chunk_process(run_id=run.pk, trace_ids=ids)
    pending = set(run.items.filter(status="pending").values_list("trace_id", flat=True))
    assert pending == loops and not AuditResult.objects.filter(run=run, trace_id__in=loops)
    assert AuditRun.objects.get(pk=run.pk).status == "running"
    # the sweep finds the run silent and uncalibrated: it calibrates, then queues what is left
    calibrate = []
    monkeypatch.setattr(services, "enqueue_calibrate", calibrate.append)
    AuditRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timezone.timedelta(1))
    assert audit_runs_resume_stale(older_than=60) == [run.pk]
    assert calibrate == [run.pk] and queued == []
    assert services.audit_run_calibrate(run_id=run.pk)
    assert not services.audit_run_calibrate(run_id=run.pk)  # once
    assert [(q["ids"], q["calibrated"], q["calibrations"]) for q in queued] == [
        (sorted(loops), True, 1)
    ]
    audit_chunk_process(run_id=run.pk, trace_ids=queued[0]["ids"])
    run.refresh_from_db()
    assert (run.status, run.traces_done, run.error_count) == ("done", N + N_LDB, 0)
    assert results(run) == results(reference)
    assert not AuditItem.objects.filter(run=run, status="pending").exists()


def test_a_start_that_died_making_its_items_leaves_none_and_the_sweep_makes_them(
    mixed, monkeypatch
):
    """Items are made in one transaction: a start killed half-way leaves none (not a part,
    which the repair would have audited as the whole run), and the repair makes them all."""
    project, loops = mixed
    reference = run_inline(project, environment="none")
    real = services._create_items

    def half_then_dies(run, ids):  # type: ignore[no-untyped-def]
        real(run, ids[: len(ids) // 2])
        assert run.items.count() == len(ids) // 2
        raise RuntimeError("worker killed")

    run = start_killed_in(monkeypatch, project, "_create_items", half_then_dies)
    assert not run.items.exists() and AuditRun.objects.get(pk=run.pk).traces_total == 0
    queued = queue_recorder(monkeypatch)
    assert services.audit_run_calibrate(run_id=run.pk)
    run.refresh_from_db()
    assert run.traces_total == N + N_LDB
    assert run.items.filter(status="pending").count() == N + N_LDB
    for q in queued:
        audit_chunk_process(run_id=run.pk, trace_ids=q["ids"])
    run.refresh_from_db()
    assert (run.status, run.traces_done, run.error_count) == ("done", N + N_LDB, 0)
    assert results(run) == results(reference)


def test_a_run_with_no_loops_or_no_vrr_is_queued_whole(project, monkeypatch):
    ingest_file(project, SYCON)
    queued = queue_recorder(monkeypatch)
    for policies in (list(POLICIES), ["checklist"]):
        run = audit_run_create(
            project=project, environment="none", enqueue=False, policies=policies
        )
        audit_run_start(run_id=run.pk)
        assert queued.pop()["ids"] == sorted(run.items.values_list("trace_id", flat=True))
        assert queued == [] and AuditRun.objects.get(pk=run.pk).calibrated_at is not None


def test_a_long_calibration_says_the_start_is_alive(mixed, monkeypatch):
    """The sweep takes a run silent for TA_STALE_SECONDS for dead: a calibration of minutes
    (10⁶ traces) beats as it goes, instead of being calibrated a second time beside itself."""
    from auditor.runs import calibration

    project, loops = mixed
    monkeypatch.setattr(calibration, "HEARTBEAT_S", 0.0)
    monkeypatch.setattr(calibration, "CALIBRATION_PART", 50)  # 164 loops: four parts
    run = audit_run_create(project=project, environment="none", enqueue=False)
    beats = []
    real = calibration.job_heartbeat
    monkeypatch.setattr(calibration, "job_heartbeat", lambda jobs: beats.append(real(jobs)))
    queue_recorder(monkeypatch)
    audit_run_start(run_id=run.pk)
    assert beats == [1] * -(-N_LDB // 50)  # one per part
