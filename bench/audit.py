#!/usr/bin/env python
"""Audit throughput through real Celery workers on PostgreSQL and Redis, beside the
policies-only figure measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trace_auditor_bench \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python bench/audit.py [--traces 4000] [--events 50]

Ingests N synthetic 50-event traces (the policies benchmark's mix), then:
- policies only: `Auditor.audit` over the same events, in this process (no database);
- end to end: an audit run of all four policies, from creation to done, with a Celery worker
  of 1 and then 2 processes (`--concurrency`): claim, load events, audit, store results,
  summarise.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")


def _policies_bench():  # type: ignore[no-untyped-def]
    """bench/policies.py as a module (its name would shadow the policies package on sys.path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_policies", ROOT / "bench" / "policies.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def start_worker(concurrency: int, log: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [
            str(ROOT / ".venv/bin/celery"),
            "-A",
            "auditor",
            "worker",
            "-Q",
            "ingest,audit,export",
            "--concurrency",
            str(concurrency),
            "-l",
            "info",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while b"ready." not in log.read_bytes():
        if time.monotonic() > deadline or proc.poll() is not None:
            sys.exit(f"worker did not start:\n{log.read_text()[-2000:]}")
        time.sleep(0.2)
    return proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=4000)
    parser.add_argument("--events", type=int, default=50)
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    if connection.vendor != "postgresql" or not os.environ.get("CELERY_BROKER_URL", "").startswith(
        "redis"
    ):
        sys.exit("set DATABASE_URL=postgres://… and CELERY_BROKER_URL=redis://…")
    call_command("migrate", verbosity=0)

    import redis as redis_lib

    from auditor.models import AuditRun
    from auditor.runs.services import audit_run_create
    from policies import POLICIES, Auditor
    from traces.models import Project, Trace
    from traces.selectors import load_events
    from traces.services import upload_create, upload_process

    make_traces = _policies_bench().make_traces
    redis_lib.Redis.from_url(os.environ["CELERY_BROKER_URL"]).flushdb()
    project = Project.objects.create(name=f"bench-audit-{time.time_ns()}")
    traces = make_traces(args.traces, args.events)
    data = b"".join(orjson.dumps(e) + b"\n" for t in traces for e in t)
    up, _ = upload_create(
        project=project, fileobj=data, filename="bench.jsonl", source="cli", enqueue=False
    )
    up = upload_process(upload_id=up.pk)
    assert up.traces_accepted == args.traces, up.errors[:3]
    # Fresh statistics, as autovacuum would have them shortly after a large ingest (earlier
    # runs' deleted rows otherwise mislead the planner into sequential scans).
    with connection.cursor() as cur:
        cur.execute("ANALYZE traces_event; ANALYZE traces_trace")
    print(f"{args.traces} traces x {args.events} events ingested")

    ids = list(Trace.objects.filter(project=project).values_list("pk", flat=True))
    events = load_events(ids)
    auditor = Auditor(POLICIES, {}, "heuristic")
    t0 = time.perf_counter()
    for tid in ids:
        auditor.audit(events[tid])
    baseline = args.traces / (time.perf_counter() - t0)
    print(f"policies only (in-process, no database):   {baseline:>8,.0f} traces/s")

    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for concurrency in (1, 2):
            worker = start_worker(concurrency, Path(tmp) / f"worker{concurrency}.log")
            try:
                t0 = time.perf_counter()
                run = audit_run_create(project=project, environment="none")
                while AuditRun.objects.get(pk=run.pk).status != "done":
                    time.sleep(0.05)
                elapsed = time.perf_counter() - t0
            finally:
                os.killpg(worker.pid, 15)
                worker.wait(timeout=30)
            run.refresh_from_db()
            assert run.traces_done == args.traces and run.error_count == 0
            rates[concurrency] = args.traces / elapsed
            print(
                f"end to end, worker with {concurrency} process{'es' if concurrency > 1 else ''}:"
                f"{'' if concurrency > 1 else '  '}   {rates[concurrency]:>8,.0f} traces/s"
                f"  ({rates[concurrency] / baseline:.2f} of policies-only)"
            )
    print(
        f"scaling 1 -> 2 processes: {rates[2] / rates[1]:.2f}x (the machine has "
        f"{os.cpu_count()} cores, shared with PostgreSQL and Redis)"
    )
    project.delete()


if __name__ == "__main__":
    main()
