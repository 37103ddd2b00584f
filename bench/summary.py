#!/usr/bin/env python
"""The run summary alone: seconds and peak memory of `audit_run_summary` on a
finished run of N traces, each measurement in a fresh process, optionally beside an earlier
commit's code on the same run (alternated, best of --repeat; the two summaries must be
byte-identical).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trace_auditor_bench \\
        .venv/bin/python bench/summary.py --traces 100000 [--repeat 3] [--base a404a68]

The run: bench/audit.py's trace mix (50 events each), all four policies, audited inline once in
a project named ``bench-summary-N`` that is kept, so later calls (and other commits) reuse it —
ingest and audit of a large run take many minutes. Memory is the process's peak RSS (VmHWM) over its
RSS just before the call, with Django, numpy and the policies already imported; with
``--tracemalloc``, also the peak of Python allocations in a separate pass (slower).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = """
import os, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")
import django
django.setup()
import numpy, orjson
from django.db import connection
from auditor.runs.models import AuditRun
from auditor.runs.summary import audit_run_summary
import policies.stats.report, policies.stats.twincheck_report

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024

run = AuditRun.objects.get(pk=int(sys.argv[2]))
connection.ensure_connection()
trace = sys.argv[4] == "1"
rss = status("VmRSS:")
if trace:
    tracemalloc.start()
t0 = time.perf_counter()
summary = audit_run_summary(run)
seconds = time.perf_counter() - t0
traced = tracemalloc.get_traced_memory()[1] / 2**20 if trace else 0.0
open(sys.argv[3], "wb").write(orjson.dumps(summary))
print(seconds, status("VmHWM:") - rss, traced)
"""


def finished_run(traces: int) -> int:
    """The id of a finished all-policies run over ``traces`` bench traces (made once)."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")
    import django

    django.setup()
    import orjson
    from django.core.management import call_command
    from django.db import connection

    from auditor.runs.models import AuditRun
    from auditor.runs.services import audit_run_create, audit_run_start
    from bench.audit import trace_parts
    from traces.models import Project
    from traces.services import upload_create, upload_process

    call_command("migrate", verbosity=0)
    project, created = Project.objects.get_or_create(name=f"bench-summary-{traces}")
    run = AuditRun.objects.filter(project=project, status="done").order_by("pk").first()
    if run is not None:
        return run.pk
    t0 = time.perf_counter()
    if created:
        for part in trace_parts(traces, 50):
            data = b"".join(orjson.dumps(e) + b"\n" for t in part for e in t)
            up, _ = upload_create(
                project=project, fileobj=data, filename="bench.jsonl", source="cli", enqueue=False
            )
            assert upload_process(upload_id=up.pk).traces_accepted == len(part)
    run = audit_run_create(project=project, environment="none", enqueue=False)
    audit_run_start(run_id=run.pk, inline=True)
    run.refresh_from_db()
    assert run.status == "done" and run.traces_done == traces, (run.status, run.traces_done)
    # Fresh statistics, as autovacuum would have them: without, PostgreSQL scanned every event
    # for each calibration part, and planned the summary's pages differently.
    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    print(f"ingested and audited {traces} traces in {time.perf_counter() - t0:.0f} s")
    return run.pk


def measure(code: Path, run_id: int, out: Path, trace: bool) -> tuple[float, float, float]:
    """(seconds, peak RSS over the RSS before, MB; tracemalloc peak, MB) in a fresh process."""
    args = [sys.executable, "-c", CHILD, str(code), str(run_id), str(out), str(int(trace))]
    done = subprocess.run(args, cwd=code, check=True, capture_output=True, text=True)
    seconds, rss, traced = map(float, done.stdout.split()[-3:])
    return seconds, rss, traced


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3, help="best of N")
    ap.add_argument("--base", help="an earlier commit to measure beside this code")
    ap.add_argument("--tracemalloc", action="store_true")
    a = ap.parse_args()
    run_id = finished_run(a.traces)
    with tempfile.TemporaryDirectory() as tmp:
        codes = {"this": ROOT}
        if a.base:
            base = Path(tmp) / "base"
            base.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", a.base], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
            codes = {"base": base, "this": ROOT}
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in codes}
        for i in range(a.repeat):
            for name, code in list(codes.items())[:: 1 if i % 2 == 0 else -1]:
                runs[name].append(measure(code, run_id, Path(tmp) / f"{name}.json", False))
        best = {name: (min(r[0] for r in m), min(r[1] for r in m)) for name, m in runs.items()}
        for name, code in codes.items():
            seconds, rss = best[name]
            traced = ""
            if a.tracemalloc:
                peak = measure(code, run_id, Path(tmp) / f"{name}.json", True)[2]
                traced = f", Python allocations peak {peak:.1f} MB"
            print(
                f"{name}: summary of {a.traces} traces (run {run_id}) {seconds:.2f} s, "
                f"peak RSS +{rss:.0f} MB{traced} (best of {a.repeat})"
            )
        if a.base:
            same = (Path(tmp) / "base.json").read_bytes() == (Path(tmp) / "this.json").read_bytes()
            print(
                f"this / base: {best['this'][0] / best['base'][0]:.2f}x the time, "
                f"{best['this'][1] / max(best['base'][1], 1):.2f}x the memory; "
                f"summaries {'byte-identical' if same else 'DIFFER'}"
            )


if __name__ == "__main__":
    main()
