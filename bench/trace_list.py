#!/usr/bin/env python
"""Traces list: page 1,000 vs page 1 at many traces (SPEC §9: no slower than 1.5×).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trace_auditor_bench_list \
        .venv/bin/python bench/trace_list.py [--traces 1000000] [--repeat 15]

Creates the database's schema (migrate), then a project with N bare trace rows written with
COPY (no events: the list reads trace columns only), ANALYZEs, and times the list view
in-process through Django's test client (URL routing, middleware, queries and template — the
server's whole work for a request) for page 1 and for page 1,000, reached by its keyset
(`?after=<id>`) as a user paging would reach it — the two pages' requests in turn, so load drift
on a shared machine falls on both. Reports median and p95 of each and their ratios, for the full
page and the htmx rows fragment, unfiltered and with a model filter, and each page's SQL: the
number of queries and their summed execution time by EXPLAIN ANALYZE. Rows are reused by later
runs when the project already holds N traces.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")

from _site import bench_site, p95  # noqa: E402  (bench/, the script's own folder)

MODELS = ["gpt-4o", "claude", "qwen-7b", "llama-70b", "mistral"]
BENCHMARKS = ["bfcl", "tau-bench", "sycon-bench"]
CATEGORIES = [f"cat-{i}" for i in range(10)]
PAGE = 50
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def fill(project, upload, n: int) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection

    rng = random.Random(0)
    cols = (
        "project_id, upload_id, external_id, agent, model, benchmark, category, task_id, "
        "run_label, run_source, outcome_success, header, event_count, created_at"
    )
    t0 = time.perf_counter()
    with connection.cursor() as cur:
        with cur.cursor.copy(f"COPY traces_trace ({cols}) FROM STDIN") as copy:
            for i in range(n):
                copy.write_row(
                    (
                        project.pk,
                        upload.pk,
                        f"bench-{i:08d}",
                        "agent",
                        rng.choice(MODELS),
                        rng.choice(BENCHMARKS),
                        rng.choice(CATEGORIES),
                        f"task-{i % 5000}",
                        "",
                        "",
                        rng.random() < 0.6,
                        "{}",
                        0,
                        # ten seconds apart: the date filter has days to choose from
                        START + datetime.timedelta(seconds=10 * i),
                    )
                )
        cur.execute("ANALYZE traces_trace")
    print(f"COPY {n:,} traces in {time.perf_counter() - t0:.1f}s")


def after_for_page(qs, page: int) -> int | None:  # type: ignore[no-untyped-def]
    """The keyset a user reaches by clicking "Older" page-1 times (computed directly here)."""
    if page == 1:
        return None
    return qs.order_by("-id").values_list("id", flat=True)[(page - 1) * PAGE - 1]


def timed_pair(client, urls: tuple[str, str], repeat: int, **headers) -> list[list[float]]:  # type: ignore[no-untyped-def]
    """Both pages requested in turn, `repeat` times each: a shared machine's load drifts over
    seconds, and timing one page's requests after the other's puts that drift into the ratio
    (page 1,000 then measures slower than page 1 while doing no more work)."""
    times: list[list[float]] = [[], []]
    for i in range(repeat + 2):
        for k, url in enumerate(urls if i % 2 else urls[::-1]):
            t0 = time.perf_counter()
            r = client.get(url, **headers)
            dt = time.perf_counter() - t0
            assert r.status_code == 200, r.status_code
            if i >= 2:  # the first two warm caches
                times[k if i % 2 else 1 - k].append(dt)
    return [sorted(t) for t in times]


def sql_profile(client, url: str, **headers) -> tuple[int, float]:  # type: ignore[no-untyped-def]
    """The page's SQL queries: how many, and their summed execution time by EXPLAIN ANALYZE."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        client.get(url, **headers)
    total = 0.0
    with connection.cursor() as cur:
        for q in ctx.captured_queries:
            if q["sql"].startswith("SELECT"):
                rows = cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + q["sql"]).fetchone()[0]
                plan = rows[0] if isinstance(rows, list) else rows
                total += plan["Execution Time"]
    return len(ctx.captured_queries), total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--page", type=int, default=1000)
    args = ap.parse_args()

    user, project, client = bench_site("bench-list", "bench-trace-list")
    from traces.models import Trace, Upload

    upload, _ = Upload.objects.get_or_create(
        project=project,
        content_hash="bench-trace-list",
        defaults={"filename": "bench", "size": 0, "source": "cli", "status": "done"},
    )
    have = Trace.objects.filter(project=project).count()
    if have < args.traces:
        if have:
            Trace.objects.filter(project=project).delete()
        fill(project, upload, args.traces)
    n = Trace.objects.filter(project=project).count()

    base = f"/projects/{project.pk}/traces/"
    print(f"{n:,} traces; {args.repeat} requests per page, the two pages in turn (ms)")
    print(
        f"{'case':30} {'page 1 p50':>10} {'p95':>6} {'page ' + str(args.page) + ' p50':>13} "
        f"{'p95':>6} {'ratio p50':>9} {'p95':>5}   queries, SQL ms (EXPLAIN ANALYZE) p1 / pN"
    )
    everything = Trace.objects.filter(project=project)
    since = START + datetime.timedelta(days=3)
    for label, params, qs in (
        ("unfiltered", {}, everything),
        ("model=claude", {"model": "claude"}, everything.filter(model="claude")),
        # a trace-id prefix of 100,000 traces, and ten days of 8,640 traces each
        (
            "tid=bench-001",
            {"tid": "bench-001"},
            everything.filter(external_id__startswith="bench-001"),
        ),
        (
            "ten days",
            {
                "from": since.date().isoformat(),
                "to": (since + datetime.timedelta(days=9)).date().isoformat(),
            },
            everything.filter(
                created_at__gte=since, created_at__lt=since + datetime.timedelta(days=10)
            ),
        ),
    ):
        after = after_for_page(qs, args.page)
        q = urlencode(params)
        urls = (f"{base}?{q}", f"{base}?{q}&after={after}")
        for kind, headers in (("full page", {}), ("htmx rows", {"HTTP_HX_REQUEST": "true"})):
            t1, tn = timed_pair(client, urls, args.repeat, **headers)
            (q1, s1), (qn, sn) = (sql_profile(client, u, **headers) for u in urls)
            m1, mn = statistics.median(t1), statistics.median(tn)
            print(
                f"{label + ', ' + kind:30} {m1 * 1000:10.1f} {p95(t1) * 1000:6.1f} "
                f"{mn * 1000:13.1f} {p95(tn) * 1000:6.1f} {mn / m1:9.2f} {p95(tn) / p95(t1):5.2f}"
                f"   {q1}, {s1:.1f} / {qn}, {sn:.1f}"
            )


if __name__ == "__main__":
    main()
