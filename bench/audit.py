#!/usr/bin/env python
"""Audit throughput through real Celery workers on PostgreSQL and Redis, beside the
policies-only figure measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trace_auditor_bench \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python bench/audit.py [--traces 4000] [--events 50] [--repeat 2]

Ingests N synthetic 50-event traces (the policies benchmark's mix), then:
- policies only: `Auditor.audit` over the same events, in this process (no database);
- end to end: an audit run of all four policies, from creation to done, with a Celery worker
  of 1 and then 2 processes (`--concurrency`): claim, load events, audit, store results,
  summarise. Best of --repeat runs each; per run, the peak RSS of each worker pool process
  (VmHWM from /proc, read before the worker stops) and the summary's seconds; after the first,
  the database bytes per trace of its results.

With `--llm` (instead of the 1 → 2 scaling): one worker process, three runs of all four
policies — no model (heuristic judge); the ``llm`` judge against the scripted server of
tests/fakes (cache cold: every call made and stored in the database cache); the same again,
every call a cache hit (0 HTTP requests, asserted). The target: the cache-hit path adds
< 10 % to the audit's wall time; the ratio is printed.
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
    parser.add_argument("--llm", action="store_true", help="no model vs llm judge, cache hits")
    parser.add_argument("--repeat", type=int, default=1, help="best of N (runs and baselines)")
    parser.add_argument(
        "--processes",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[1, 2],
        help="worker processes per run, in order (default 1,2)",
    )
    parser.add_argument(
        "--baseline-traces", type=int, default=4000, help="policies-only baselines on this many"
    )
    parser.add_argument(
        "--keep",
        metavar="PROJECT",
        default="",
        help="ingest into this project once and keep it (10^5 traces take ~10 min to ingest)",
    )
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

    from auditor.limits import tune_gc
    from policies import POLICIES, Auditor
    from traces.models import Project, Trace
    from traces.search import index_upload
    from traces.selectors import load_events
    from traces.services import upload_create, upload_process

    redis_lib.Redis.from_url(os.environ["CELERY_BROKER_URL"]).flushdb()
    kept = Project.objects.filter(name=args.keep).first() if args.keep else None
    if kept is not None and Trace.objects.filter(project=kept).count() != args.traces:
        sys.exit(f"project {args.keep!r} holds other traces than --traces {args.traces}")
    project = kept or Project.objects.create(name=args.keep or f"bench-audit-{time.time_ns()}")
    # In uploads of at most 10,000 traces: 10⁵ traces built at once would not fit in memory.
    for part in [] if kept is not None else trace_parts(args.traces, args.events):
        data = b"".join(orjson.dumps(e) + b"\n" for t in part for e in t)
        up, _ = upload_create(
            project=project, fileobj=data, filename="bench.jsonl", source="cli", enqueue=False
        )
        up = upload_process(upload_id=up.pk)
        assert up.traces_accepted == len(part), up.errors[:3]
        # The search index, here and now: its queued task would otherwise run on the first
        # worker below, inside the timed audit (and slow the 1-process figure down).
        index_upload(up.pk)
    redis_lib.Redis.from_url(os.environ["CELERY_BROKER_URL"]).flushdb()
    # Fresh statistics, as autovacuum would have them shortly after a large ingest (earlier
    # runs' deleted rows otherwise mislead the planner into sequential scans).
    with connection.cursor() as cur:
        cur.execute("ANALYZE traces_event; ANALYZE traces_trace")
    print(f"{args.traces} traces x {args.events} events {'kept' if kept else 'ingested'}")
    if kept is not None:
        drop_runs(project)

    # The policies-only baselines on the first traces (at most --baseline-traces: a rate per
    # trace; all 10⁵ traces' events would not fit in memory), best of --repeat.
    ids = list(
        Trace.objects.filter(project=project)
        .order_by("pk")
        .values_list("pk", flat=True)[: args.baseline_traces]
    )
    events = load_events(ids)
    auditor = Auditor(POLICIES, {}, "heuristic")
    # Twice: with Python's collector settings, then with the workers' (auditor.limits.tune_gc,
    # which every worker process applies at start): the ratios below compare like with like.
    python_gc = best_rate(auditor, ids, events, args.repeat)
    print(f"policies only (in-process, no database), Python's GC: {python_gc:>8,.0f} traces/s")
    tune_gc()
    baseline = best_rate(auditor, ids, events, args.repeat)
    print(f"policies only (in-process, no database), workers' GC: {baseline:>8,.0f} traces/s")

    if args.llm:
        llm_comparison(project, args.traces)
        if not args.keep:
            project.delete()
        return
    # The results table compacted (earlier benchmarks' deleted rows): its size after the first
    # run is that run's alone, if no other project's results are kept in this database.
    with connection.cursor() as cur:
        cur.execute("VACUUM FULL auditor_auditresult")
    rates: dict[int, float] = {}
    calibrated = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for concurrency in args.processes:
            # Best of --repeat runs, alternating with nothing: each run is a fresh AuditRun.
            for attempt in range(args.repeat):
                log = Path(tmp) / f"worker{concurrency}-{attempt}.log"
                run, elapsed, rss = timed_worker_run(project, concurrency, log)
                assert run.traces_done == args.traces and run.error_count == 0
                rate = args.traces / elapsed
                print(
                    f"  run #{run.pk}: {concurrency} process(es) {rate:,.0f} traces/s; "
                    f"peak RSS per worker process {', '.join(f'{m:.0f}' for m in rss)} MB; "
                    f"start (items, calibration) {run.timings.get('prepare_s', '?')} s, "
                    f"summary {run.timings.get('summary_s', '?')} s"
                )
                rates[concurrency] = max(rates.get(concurrency, 0.0), rate)
                # the baseline from the first process count's runs, whichever it is (with
                # `--processes 2` alone, a baseline fixed at 1 process is never measured)
                if concurrency == args.processes[0]:
                    calibrated = max(calibrated, calibrated_rate(run, ids, events))
                    if attempt == 0:
                        print_sizes(run, args.traces)
            if concurrency == args.processes[0]:
                print(
                    f"policies only, with the run's VRR calibration: {calibrated:>6,.0f} traces/s"
                    "  (the work the run's auditors do)"
                )
            print(
                f"end to end, worker with {concurrency} process{'es' if concurrency > 1 else ''}:"
                f"{'' if concurrency > 1 else '  '}   {rates[concurrency]:>8,.0f} traces/s"
                f"  ({rates[concurrency] / baseline:.2f} of policies-only, "
                f"{rates[concurrency] / calibrated:.2f} of calibrated policies-only)"
            )
    if {1, 2} <= set(rates):
        print(
            f"scaling 1 -> 2 processes: {rates[2] / rates[1]:.2f}x (the machine has "
            f"{os.cpu_count()} cores, shared with PostgreSQL and Redis)"
        )
    if args.keep:
        drop_runs(project)
    else:
        project.delete()


def drop_runs(project) -> None:  # type: ignore[no-untyped-def]
    """The kept project's audit runs gone, their 10⁵-row tables by SQL (the ORM's cascade would
    read every result's id first)."""
    from django.db import connection

    from auditor.models import AuditRun

    runs = list(AuditRun.objects.filter(project=project).values_list("pk", flat=True))
    with connection.cursor() as cur:
        for table in ("auditor_auditresult", "auditor_audititem", "auditor_calibration"):
            cur.execute(f"DELETE FROM {table} WHERE run_id = ANY(%s)", [runs])
    AuditRun.objects.filter(pk__in=runs).delete()


def best_rate(auditor, ids, events, repeat: int) -> float:  # type: ignore[no-untyped-def]
    best = 0.0
    for _ in range(repeat):
        t0 = time.perf_counter()
        for tid in ids:
            auditor.audit(events[tid])
        best = max(best, len(ids) / (time.perf_counter() - t0))
    return best


def trace_parts(count: int, n_events: int, size: int = 10_000):  # type: ignore[no-untyped-def]
    """`tests.builders.synthetic.make_traces(count, n_events)`, the same traces, in parts."""
    import random

    from tests.builders.synthetic import KINDS as kinds

    rng = random.Random(0)
    for start in range(0, count, size):
        stop = min(count, start + size)
        yield [kinds[i % 4](rng, f"b{i}", n_events) for i in range(start, stop)]


def worker_processes(pid: int) -> list[int]:
    """The worker's pool processes (children of the Celery main process), from /proc."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        out.extend(int(c) for c in children)
    return out


def peak_rss_mb(pid: int) -> float:
    """Peak resident set size of a live process (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed_worker_run(project, concurrency: int, log: Path):  # type: ignore[no-untyped-def]
    """One audit run from creation to done through a fresh worker of `concurrency` processes:
    (run, seconds, peak RSS of each pool process in MB, read before the worker stops)."""
    from auditor.models import AuditRun
    from auditor.runs.services import audit_run_create

    worker = start_worker(concurrency, log)
    try:
        pool = worker_processes(worker.pid)
        cpu0 = {"workers": sum(map(cpu_seconds, pool)), "postgres": postgres_cpu_seconds()}
        t0 = time.perf_counter()
        run = audit_run_create(project=project, environment="none")
        while AuditRun.objects.get(pk=run.pk).status != "done":
            time.sleep(0.05)
        elapsed = time.perf_counter() - t0
        cpu = {"workers": sum(map(cpu_seconds, pool)), "postgres": postgres_cpu_seconds()}
        rss = [peak_rss_mb(p) for p in pool]
    finally:
        os.killpg(worker.pid, 15)
        worker.wait(timeout=30)
    run.refresh_from_db()
    used = {k: cpu[k] - cpu0[k] for k in cpu}
    print(
        f"  CPU seconds during the run: worker pool processes {used['workers']:.2f}, "
        f"PostgreSQL (the whole server) {used['postgres']:.2f}; wall {elapsed:.2f}"
    )
    return run, elapsed, rss


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, *, children: bool = False) -> float:
    """User + system CPU seconds of a live process (and of its reaped children), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / _TICK


def postgres_cpu_seconds() -> float:
    """CPU seconds of the PostgreSQL server on this machine: its live processes, plus the
    backends that exited (the postmaster reaps them, so they count in its children's time).
    The database's share of the cores the workers run on; other databases' clients count too."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if "(postgres)" not in text:
            continue
        pid = int(stat.parent.name)
        ppid = int(text.rsplit(")", 1)[1].split()[1])
        # the postmaster is the postgres process whose parent is not postgres
        parent = Path(f"/proc/{ppid}/stat")
        is_master = not parent.exists() or "(postgres)" not in parent.read_text()
        total += cpu_seconds(pid, children=is_master)
    return total


def print_sizes(run, n: int) -> None:  # type: ignore[no-untyped-def]
    """Database bytes per trace of a run's results: the rows themselves (pg_column_size, with
    their TOAST-compressed jsonb) and the results table with its indexes and TOAST (compacted
    before the first run, so it holds this run's rows only)."""
    from django.db import connection

    from auditor.models import AuditResult

    with connection.cursor() as cur:
        cur.execute(
            "SELECT sum(pg_column_size(r.*)), sum(pg_column_size(r.record)), "
            "sum(coalesce(pg_column_size(r.guarded_trajectory), 0)) "
            "FROM auditor_auditresult r WHERE run_id = %s",
            [run.pk],
        )
        rows, records, trajectories = cur.fetchone()
        cur.execute("SELECT pg_total_relation_size('auditor_auditresult')")
        (table,) = cur.fetchone()
    whole = (
        f"{table / n:,.0f} B"
        if not AuditResult.objects.exclude(run=run).exists()
        else "not measured (the database holds other runs' results)"
    )
    print(
        f"database per trace: result rows {rows / n:,.0f} B (records {records / n:,.0f} B, "
        f"guarded trajectories {trajectories / n:,.0f} B); results table with indexes and "
        f"TOAST {whole}"
    )


def calibrated_rate(run, ids, events) -> float:  # type: ignore[no-untyped-def]
    """Policies-only traces/s with the auditors the run used: its VRR calibration makes VRR
    choose a rule per loop (a sign-identifiability check), work the default settings skip."""
    from auditor.runs.work import AuditorCache, with_env_name
    from traces.models import Trace

    auditors = AuditorCache(run)
    traces = {t.pk: t for t in with_env_name(Trace.objects.filter(pk__in=ids))}
    picked = [auditors.for_trace(traces[t].env_name, traces[t].model, events[t]) for t in ids]
    t0 = time.perf_counter()
    for auditor, tid in zip(picked, ids, strict=True):
        auditor.audit(events[tid])
    return len(ids) / (time.perf_counter() - t0)


def timed_run(project, **kw):  # type: ignore[no-untyped-def]
    from auditor.models import AuditRun
    from auditor.runs.services import audit_run_create

    t0 = time.perf_counter()
    run = audit_run_create(project=project, environment="none", **kw)
    while AuditRun.objects.get(pk=run.pk).status != "done":
        time.sleep(0.05)
    elapsed = time.perf_counter() - t0
    run.refresh_from_db()
    assert run.error_count == 0, run.pk
    return run, elapsed


def inline_cpu(project, **kw) -> float:  # type: ignore[no-untyped-def]
    from auditor.runs.services import audit_run_create, audit_run_start

    run = audit_run_create(project=project, environment="none", enqueue=False, **kw)
    t0 = time.process_time()
    audit_run_start(run_id=run.pk, inline=True)
    return time.process_time() - t0


def llm_comparison(project, n: int) -> None:  # type: ignore[no-untyped-def]
    """No model vs the llm judge from a warm database cache, through one worker process."""
    from auditor.models import RunModelUsage
    from bench.llm_cache import verdict
    from tests.fakes.openai_server import FakeOpenAI

    server = FakeOpenAI(verdict).start()
    # The scripted server is on loopback, which the worker's model requests may not reach
    # unless the operator allows it (the worker inherits this environment).
    os.environ.setdefault("TA_MODEL_ALLOWED_HOSTS", "127.0.0.1")
    model = {
        "endpoint": {"base_url": server.url, "model": "bench-judge", "max_retries": 0},
        "uses": ["judge"],
    }
    with tempfile.TemporaryDirectory() as tmp:
        worker = start_worker(1, Path(tmp) / "worker-llm.log")
        try:
            cold_run, cold = timed_run(project, judge="llm", model_settings=model)
            calls = server.count
            print(f"llm judge, cold cache ({calls} HTTP calls): {cold:7.2f} s")
            # Alternated, best of 3 each: the machine is shared, so a single pair of runs
            # mostly measures whoever else is using the CPUs at that moment.
            offline_s: list[float] = []
            hits_s: list[float] = []
            for _ in range(3):
                _, t = timed_run(project)
                offline_s.append(t)
                hit_run, t = timed_run(project, judge="llm", model_settings=model)
                hits_s.append(t)
            assert server.count == calls, "a cache-hit run made HTTP requests"
        finally:
            os.killpg(worker.pid, 15)
            worker.wait(timeout=30)
            server.stop()
    usage = RunModelUsage.objects.get(run=hit_run)
    # Identical requests within the cold run were already hits there: hits ≥ HTTP calls.
    assert usage.cache_hits == usage.made >= calls and usage.http_requests == 0
    offline, hits = min(offline_s), min(hits_s)
    print(f"no model (heuristic judge), best of 3: {offline:7.2f} s  {n / offline:,.0f} traces/s")
    print(f"llm judge, all {usage.cache_hits} calls cache hits, best of 3: {hits:7.2f} s")
    print(f"  all runs: no model {[round(x, 2) for x in offline_s]}")
    print(f"  all runs: cache hits {[round(x, 2) for x in hits_s]}")
    print(f"cache-hit path / no model wall time: {hits / offline:.3f} (target: < 1.10)")
    # The same comparison in this process (inline runs), by CPU time: what the cache-hit path
    # costs the auditing process itself, whatever else the shared machine is doing.
    cpu: dict[str, list[float]] = {"no model": [], "cache hits": []}
    for _ in range(3):
        for name, kw in (
            ("no model", {}),
            ("cache hits", {"judge": "llm", "model_settings": model}),
        ):
            cpu[name].append(inline_cpu(project, **kw))
    a, b = min(cpu["no model"]), min(cpu["cache hits"])
    print(f"inline, CPU seconds best of 3: no model {a:.2f}, cache hits {b:.2f}: ratio {b / a:.3f}")
    assert cold_run.pk != hit_run.pk


if __name__ == "__main__":
    main()
