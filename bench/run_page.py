#!/usr/bin/env python
"""Run page: server time of a finished audit run's page at 100,000 traces (SPEC §9: p95 < 300 ms),
against the page of the small run its rows were copied from, measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trace_auditor_bench_run \\
        .venv/bin/python bench/run_page.py [--traces 100000] [--repeat 40]

Creates the database's schema (migrate), then (once; reused by later runs):
- a seed: 400 synthetic traces of the policies benchmark's mix, ingested and audited inline by
  all four policies — real results, real records, a real summary;
- the big run: N bare trace rows written with COPY (the run page reads no events), a finished
  run over them, its items and 4·N results COPYd from the seed's results in turn (records as
  stored, guarded trajectories left out: the run page never reads them and PostgreSQL keeps
  them out of line), and its summary computed by the app's own `audit_run_summary`.
Then times both run pages in-process through Django's test client (routing, middleware, queries,
template: the server's whole work for a request), times the first view of the big run after its
summary is written (it counts the transition matrix, once), and lists the big page's SQL queries
with their times, slowest first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")


# The big run's summary is computed once, at set-up; its bootstrap size does not change what
# the page reads (the same keys and shapes), only how long set-up takes.
os.environ.setdefault("TA_SUMMARY_BOOTSTRAP", "200")

from _site import bench_site, p95  # noqa: E402  (bench/, the script's own folder)

SEED = 400
PROJECT = "bench-run-page"
CATEGORIES = [f"cat-{i}" for i in range(10)]


def seed_run(project):  # type: ignore[no-untyped-def]
    """The small run whose results the big one copies: real policies over real events."""
    import orjson

    from auditor.runs.models import AuditRun
    from auditor.runs.services import audit_run_create, audit_run_start
    from traces.services import upload_create, upload_process

    run = AuditRun.objects.filter(project=project, label="seed", status="done").first()
    if run is not None:
        return run
    from tests.builders.synthetic import make_traces

    traces = make_traces(SEED, 50)
    data = b"".join(orjson.dumps(e) + b"\n" for t in traces for e in t)
    up, _ = upload_create(
        project=project, fileobj=data, filename="seed.jsonl", source="cli", enqueue=False
    )
    upload_process(upload_id=up.pk)
    run = audit_run_create(
        project=project, environment="none", label="seed", trace_filter={"upload": up.pk},
        enqueue=False,
    )  # fmt: skip
    audit_run_start(run_id=run.pk, inline=True)
    run.refresh_from_db()
    assert run.status == "done" and run.traces_done == SEED, (run.status, run.traces_done)
    return run


def big_run(project, seed, n: int):  # type: ignore[no-untyped-def]
    from django.db import connection

    from auditor.runs.models import DECISION_FIELDS, AuditResult, AuditRun
    from auditor.runs.summary import audit_run_summary
    from traces.models import Upload

    label = f"big-{n}"
    run = AuditRun.objects.filter(project=project, label=label, status="done").first()
    if run is not None and run.summary:
        return run
    AuditRun.objects.filter(project=project, label=label).delete()
    upload, _ = Upload.objects.get_or_create(
        project=project,
        content_hash=label,
        defaults={"filename": label, "size": 0, "source": "cli", "status": "done"},
    )
    t0 = time.perf_counter()
    seed_rows = list(
        AuditResult.objects.filter(run=seed)
        .order_by("trace_id", "policy")
        .values_list("trace_id", "policy", *DECISION_FIELDS)
    )
    by_trace: dict[int, list[tuple]] = {}
    for r in seed_rows:
        by_trace.setdefault(r[0], []).append(r[1:])
    seed_traces = list(by_trace.values())
    run = AuditRun.objects.create(
        project=project,
        label=label,
        policies=seed.policies,
        settings=seed.settings,
        judge=seed.judge,
        environment=seed.environment,
        trace_filter={"upload": upload.pk},
        status="done",
        traces_total=n,
        traces_done=n,
        started_at=seed.started_at,
        finished_at=seed.finished_at,
    )
    with connection.cursor() as cur:
        have = cur.execute(
            "SELECT count(*) FROM traces_trace WHERE upload_id = %s", [upload.pk]
        ).fetchone()[0]
        if have != n:
            cur.execute("DELETE FROM traces_trace WHERE upload_id = %s", [upload.pk])
            cols = "project_id, upload_id, external_id, agent, model, benchmark, category, "
            cols += "task_id, run_label, header, event_count, created_at"
            with cur.cursor.copy(f"COPY traces_trace ({cols}) FROM STDIN") as copy:
                for i in range(n):
                    copy.write_row(
                        (project.pk, upload.pk, f"{label}-{i:07d}", "agent", "model", "bench",
                         CATEGORIES[i % len(CATEGORIES)], f"task-{i}", "", "{}", 0,
                         "2026-01-01T00:00:00Z")
                    )  # fmt: skip
        ids = [
            r[0]
            for r in cur.execute(
                "SELECT id FROM traces_trace WHERE upload_id = %s ORDER BY id", [upload.pk]
            ).fetchall()
        ]
        with cur.cursor.copy(
            "COPY auditor_audititem (run_id, trace_id, status, error, attempts) FROM STDIN"
        ) as copy:
            for tid in ids:
                copy.write_row((run.pk, tid, "done", "", 1))
        cols = "run_id, trace_id, policy, applied, actor_success, guarded_success, transition, "
        cols += "continuation, record, created_at"
        import orjson

        with cur.cursor.copy(f"COPY auditor_auditresult ({cols}) FROM STDIN") as copy:
            for i, tid in enumerate(ids):
                for p, app, a, g, tr, cont, rec in seed_traces[i % len(seed_traces)]:
                    copy.write_row(
                        (run.pk, tid, p, app, a, g, tr, cont, orjson.dumps(rec).decode(),
                         "2026-01-01T00:00:00Z")
                    )  # fmt: skip
        cur.execute("ANALYZE traces_trace; ANALYZE auditor_audititem; ANALYZE auditor_auditresult")
    print(f"COPY {n:,} traces, items and {n * len(seed.policies):,} results in "
          f"{time.perf_counter() - t0:.1f}s")  # fmt: skip
    t0 = time.perf_counter()
    AuditRun.objects.filter(pk=run.pk).update(summary=audit_run_summary(run))
    print(f"summary (the app's audit_run_summary) in {time.perf_counter() - t0:.1f}s")
    run.refresh_from_db()
    return run


def timed(client, url: str, repeat: int) -> list[float]:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat + 2):
        t0 = time.perf_counter()
        r = client.get(url)
        times.append(time.perf_counter() - t0)
        assert r.status_code == 200, r.status_code
    return sorted(times[2:])  # the first two warm caches


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=40)
    args = ap.parse_args()

    user, project, client = bench_site("bench-run", PROJECT)
    from django.db import connection

    seed = seed_run(project)
    big = big_run(project, seed, args.traces)

    small_url, big_url = seed.get_absolute_url(), big.get_absolute_url()
    # The first view after the run's summary is written counts the matrix (then cached under the
    # row's version): the summary rewritten as a run's end writes it, then one view, timed.
    with connection.cursor() as cur:
        for p in big.policies:
            cur.execute(
                "UPDATE auditor_auditrun SET summary = summary #- %s WHERE id = %s",
                [[p, "transition_matrix"], big.pk],
            )
    t0 = time.perf_counter()
    client.get(big_url)
    first = time.perf_counter() - t0
    queries: list[tuple[float, str]] = []

    def record(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            queries.append((time.perf_counter() - t0, sql))

    with connection.execute_wrapper(record):
        client.get(big_url)
    # each page in two rounds, the round with the lower median kept: others' load on a shared
    # machine comes and goes
    small = min((timed(client, small_url, args.repeat) for _ in range(2)), key=statistics.median)
    large = min((timed(client, big_url, args.repeat) for _ in range(2)), key=statistics.median)
    print(f"run page, median / p95 of {args.repeat} requests (ms), best of two rounds")
    for name, ts in ((f"{SEED} traces (seed run)", small), (f"{args.traces:,} traces", large)):
        print(f"  {name:26} {statistics.median(ts) * 1000:8.1f} {p95(ts) * 1000:8.1f}")
    m_ratio = statistics.median(large) / statistics.median(small)
    p_ratio = p95(large) / p95(small)
    print(f"  ratio {args.traces:,} / {SEED}:   median {m_ratio:.2f}x, p95 {p_ratio:.2f}x")
    print(f"  first view after the summary is written (counts the matrix): {first * 1000:.0f} ms")
    print(f"{len(queries)} SQL queries on the {args.traces:,}-trace page; slowest:")
    for t, sql in sorted(queries, reverse=True)[:5]:
        print(f"  {t * 1000:7.1f} ms  {' '.join(sql.split())[:140]}")


if __name__ == "__main__":
    main()
