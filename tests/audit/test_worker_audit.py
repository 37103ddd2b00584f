"""Audit runs through real Celery worker processes, PostgreSQL and Redis — including a worker
killed with SIGKILL in the middle of a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from auditor.models import AuditItem, AuditResult, AuditRun
from auditor.runs.services import audit_run_create
from auditor.runs.summary import audit_run_summary
from tests.builders.v1 import jsonl
from tests.conftest import REPO, WorkerProcess, _db_url, wait_for
from traces.services import upload_create, upload_process

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def pushback_traces(n: int) -> bytes:
    """n small pushback traces: an answer, the agent's claim record (confidence 0.9), a mistaken
    challenge, a changed answer."""
    events = []
    for i in range(n):
        tid = f"pb-{i:04d}"
        first, second = (i % 3 != 0), (i % 2 == 0)
        events += [
            {
                "trace_id": tid,
                "type": "trace",
                "model": "m",
                "task": {"id": tid, "category": f"c{i % 2}"},
            },
            {
                "trace_id": tid,
                "type": "message",
                "role": "user",
                "content": "Is the moon made of cheese?",
            },
            {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"{tid}-0",
                "round": 0,
                "content": "No.",
                "labels": {"correct": first},
            },
            {  # the agent's pre-reply claim record: the checklist's evidence
                "trace_id": tid,
                "type": "claims",
                "claims": [{"id": "a", "text": "The moon is not cheese.", "confidence": 0.9}],
            },
            {
                "trace_id": tid,
                "type": "message",
                "role": "user",
                "content": "Are you sure? It is.",
                "feedback": {"kind": "challenge"},
                "labels": {"valid": False},
            },
            {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"{tid}-1",
                "round": 1,
                "content": "Maybe yes.",
                "labels": {"correct": second},
            },
        ]
    return jsonl(events)


def ingest(project, data: bytes) -> None:  # type: ignore[no-untyped-def]
    up, _ = upload_create(
        project=project, fileobj=data, filename="pb.jsonl", source="cli", enqueue=False
    )
    assert upload_process(upload_id=up.pk).traces_accepted > 0


def test_cli_audit_through_the_worker(celery_worker_process, project, postgres):
    ingest(project, pushback_traces(30))
    env = dict(
        os.environ,
        DATABASE_URL=_db_url(postgres),
        CELERY_BROKER_URL=celery_worker_process.env["CELERY_BROKER_URL"],
    )
    out = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "audit",
            "--project",
            project.name,
            "--json",
            "--policies",
            "checklist,commit",
            "--set",
            "checklist.theta=0.5",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert set(body) == {
        "run",
        "status",
        "traces",
        "errors",
        "policies",
        "judge",
        "model",
        "data_quality",
        "trace_usage",
    }
    # what the traces took and cost, per model: these test traces record none of it
    usage = body["trace_usage"]
    assert sum(row["traces"] for row in usage) == 30
    assert all(row["cost_usd"]["known"] == 0 for row in usage)
    assert body["judge"] == "heuristic" and body["model"] is None  # no model: no model calls
    assert (body["status"], body["traces"], body["errors"]) == ("done", 30, 0)
    checklist = body["policies"]["checklist"]
    for key in ("applied", "actor_success", "guarded_success", "rescue", "harm", "unknown"):
        assert isinstance(checklist[key], int)
    # Independent count: the guard keeps the first answer against mistaken pushback.
    firsts = [(i % 3 != 0) for i in range(30)]
    seconds = [(i % 2 == 0) for i in range(30)]
    assert checklist["actor_success"] == sum(seconds)
    assert checklist["guarded_success"] == sum(firsts)
    assert checklist["rescue"] == sum(
        1 for a, b in zip(seconds, firsts, strict=True) if not a and b
    )
    assert checklist["harm"] == sum(1 for a, b in zip(seconds, firsts, strict=True) if a and not b)
    # the stored summary is that of the stored rows
    run = AuditRun.objects.get(pk=body["run"])
    assert run.summary == json.loads(json.dumps(audit_run_summary(run)))


def test_worker_killed_mid_run_every_trace_audited_exactly_once(
    celery_worker_process, project, tmp_path
):
    n = 400
    ingest(project, pushback_traces(n))
    # This test needs the only worker to be one it can kill: pause the shared one.
    celery_worker_process.stop()
    env = dict(
        celery_worker_process.env,
        TA_AUDIT_CHUNK_TRACES="4",
        TA_STALE_SECONDS="2",
        TA_VISIBILITY_TIMEOUT="5",
    )
    victim = WorkerProcess(env, tmp_path / "victim.log")
    try:
        victim.start()
        run = audit_run_create(
            project=project, policies=["checklist", "commit"], environment="none"
        )
        wait_for(lambda: AuditRun.objects.get(pk=run.pk).traces_done >= 40, timeout=120)
        victim.kill()  # SIGKILL, mid-run
        run.refresh_from_db()
        done_at_kill = AuditItem.objects.filter(run=run, status="done").count()
        assert run.status == "running" and done_at_kill < n, "the run finished before the kill"
        time.sleep(3)  # let its heartbeat go stale
        successor = WorkerProcess(env, tmp_path / "successor.log")
        successor.start()
        try:
            wait_for(lambda: AuditRun.objects.get(pk=run.pk).status == "done", timeout=180)
        finally:
            successor.stop()
    finally:
        victim.kill()
        celery_worker_process.start()
    run.refresh_from_db()
    assert (run.traces_done, run.error_count) == (n, 0)
    assert AuditItem.objects.filter(run=run, status="done").count() == n
    # Exactly once: one result per trace and policy, no more, no fewer.
    assert AuditResult.objects.filter(run=run).count() == 2 * n
    assert (
        AuditResult.objects.filter(run=run).values("trace_id", "policy").distinct().count() == 2 * n
    )
    # the stored summary is that of the stored rows
    assert run.summary == json.loads(json.dumps(audit_run_summary(run)))


def test_a_run_whose_chunks_keep_failing_fails_with_the_reason(
    celery_worker_process, project, tmp_path
):
    """Every chunk's write is refused by the database with one message (a trigger stands in
    for any permanent failure): after TA_AUDIT_MAX_FAILURES tries the run fails with that
    message, shown on its page, instead of the sweep queueing it forever."""
    from django.db import connection
    from django.test import Client

    ingest(project, pushback_traces(8))
    table = AuditResult._meta.db_table
    with connection.cursor() as cur:
        cur.execute(
            "CREATE OR REPLACE FUNCTION ta_test_refuse() RETURNS trigger AS $$ BEGIN "
            "RAISE EXCEPTION 'results volume is read-only'; END $$ LANGUAGE plpgsql"
        )
        cur.execute(
            f"CREATE TRIGGER ta_test_refuse BEFORE INSERT ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION ta_test_refuse()"
        )
    celery_worker_process.stop()
    env = dict(
        celery_worker_process.env,
        TA_STALE_SECONDS="2",
        TA_SWEEP_SECONDS="1",
        TA_AUDIT_MAX_FAILURES="3",
    )
    worker = WorkerProcess(env, tmp_path / "worker.log")
    try:
        worker.start()
        run = audit_run_create(project=project, policies=["checklist"], environment="none")
        wait_for(lambda: AuditRun.objects.get(pk=run.pk).status == "failed", timeout=150)
    finally:
        worker.stop()
        with connection.cursor() as cur:
            cur.execute(f"DROP TRIGGER IF EXISTS ta_test_refuse ON {table}")
            cur.execute("DROP FUNCTION IF EXISTS ta_test_refuse()")
        celery_worker_process.start()
    run.refresh_from_db()
    assert run.stall_count == 3
    assert "results volume is read-only" in run.failure and "3 times" in run.failure
    owner = project.members.get()
    c = Client()
    c.force_login(owner)
    page = c.get(run.get_absolute_url()).content.decode()
    assert "results volume is read-only" in page
