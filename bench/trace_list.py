#!/usr/bin/env python
"""Traces list: page 1,000 vs page 1 at many traces (SPEC §9: no slower than 1.5×).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trace_auditor_bench_list \
        .venv/bin/python bench/trace_list.py [--traces 1000000] [--repeat 15]

Creates the database's schema (migrate), then a project with N bare trace rows written with
COPY (no events: the list reads trace columns only), ANALYZEs, and times the list view
in-process through Django's test client (URL routing, middleware, queries and template — the
server's whole work for a request) for page 1 and for page 1,000, reached by its keyset
(`?after=<id>`) as a user paging would reach it. Reports medians and the ratio, for the full
page and the htmx rows fragment, unfiltered and with a model filter. Rows are reused by later
runs when the project already holds N traces.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")

MODELS = ["gpt-4o", "claude", "qwen-7b", "llama-70b", "mistral"]
BENCHMARKS = ["bfcl", "tau-bench", "sycon-bench"]
CATEGORIES = [f"cat-{i}" for i in range(10)]
PAGE = 50


def fill(project, upload, n: int) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection

    rng = random.Random(0)
    cols = (
        "project_id, upload_id, external_id, agent, model, benchmark, category, task_id, "
        "run_label, outcome_success, header, event_count, created_at"
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
                        rng.random() < 0.6,
                        "{}",
                        0,
                        "2026-01-01T00:00:00Z",
                    )
                )
        cur.execute("ANALYZE traces_trace")
    print(f"COPY {n:,} traces in {time.perf_counter() - t0:.1f}s")


def after_for_page(qs, page: int) -> int | None:  # type: ignore[no-untyped-def]
    """The keyset a user reaches by clicking "Older" page-1 times (computed directly here)."""
    if page == 1:
        return None
    return qs.order_by("-id").values_list("id", flat=True)[(page - 1) * PAGE - 1]


def timed(client, url: str, repeat: int, **headers) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat + 2):
        t0 = time.perf_counter()
        r = client.get(url, **headers)
        times.append(time.perf_counter() - t0)
        assert r.status_code == 200, r.status_code
    return statistics.median(times[2:])  # the first two warm caches


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--page", type=int, default=1000)
    args = ap.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from traces.models import Membership, Project, Trace, Upload

    if connection.vendor != "postgresql":
        sys.exit("set DATABASE_URL=postgres://… (a bench database: rows are added to it)")
    settings.DEBUG = False
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-list")
    project, _ = Project.objects.get_or_create(name="bench-trace-list")
    Membership.objects.get_or_create(project=project, user=user, defaults={"role": "owner"})
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

    client = Client()
    client.force_login(user)
    base = f"/projects/{project.pk}/traces/"
    print(f"{n:,} traces; median of {args.repeat} requests each (ms)")
    print(f"{'case':40} {'page 1':>9} {'page ' + str(args.page):>10} {'ratio':>6}")
    for label, params, qs in (
        ("unfiltered", {}, Trace.objects.filter(project=project)),
        (
            "model=claude",
            {"model": "claude"},
            Trace.objects.filter(project=project, model="claude"),
        ),
    ):
        after = after_for_page(qs, args.page)
        q = "&".join(f"{k}={v}" for k, v in params.items())
        for kind, headers in (("full page", {}), ("htmx rows", {"HTTP_HX_REQUEST": "true"})):
            t1 = timed(client, f"{base}?{q}", args.repeat, **headers)
            tn = timed(client, f"{base}?{q}&after={after}", args.repeat, **headers)
            print(f"{label + ', ' + kind:40} {t1 * 1000:9.1f} {tn * 1000:10.1f} {tn / t1:6.2f}")


if __name__ == "__main__":
    main()
