#!/usr/bin/env python
"""Trace page: server time of a 1,000-event trace's page (SPEC §9: p95 < 300 ms), against a
10-event trace's page measured in the same run as the baseline.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trace_auditor_bench_page \
        .venv/bin/python bench/trace_page.py [--events 1000] [--repeat 40] [--timed]

Creates the database's schema (migrate), then (once; reused by later runs) a project with two
traces written straight to the tables — N and 10 events, alternating tool calls and results —
each with an audit run whose TwinCheck result replaces the middle call, so the page renders the
steps tree, the timeline, the side-by-side and the panels. With ``--timed`` every event records
its start and duration, and every other one its tokens and cost, so the steps tree draws a bar
per step. Times the page in-process through Django's test client (routing, middleware, queries,
template: the server's whole work for a request), wall and CPU time: on a shared machine the
wall time follows the load, the CPU time the server's own work. Timing belongs here, not in
tests/tracepage/test_trace_page.py, which asserts what the page shows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")

from _site import bench_site  # noqa: E402  (bench/, the script's own folder)


def timing(i: int) -> dict:
    """What a traced agent records per step: start, duration, tokens and cost."""
    start = datetime(2026, 1, 31, 12, tzinfo=UTC) + timedelta(milliseconds=250 * i)
    fields: dict = {"ts": start.isoformat().replace("+00:00", "Z"), "duration_ms": 40 + i % 200}
    if i % 2:
        fields.update(usage={"input_tokens": 900 + i, "output_tokens": 40}, cost_usd=0.0012)
    return fields


def make_trace(project, upload, n: int, timed: bool = False):  # type: ignore[no-untyped-def]
    from auditor.runs.models import AuditResult, AuditRun
    from traces.models import Event, Trace

    name = f"bench-page-{'timed-' if timed else ''}{n}"
    trace = Trace.objects.filter(project=project, external_id=name).first()
    if trace is not None:
        return trace
    trace = Trace.objects.create(project=project, upload=upload, external_id=name, event_count=n)
    payloads: list[dict] = [{"trace_id": name, "type": "trace", "seq": 0}]
    for i in range(1, n):
        if i % 2:
            payloads.append(
                {"trace_id": name, "type": "tool_call", "seq": i, "name": "get", "arguments": {}}
            )
        else:
            payloads.append(
                {"trace_id": name, "type": "tool_result", "seq": i, "status": "ok", "content": i}
            )
        if timed:
            payloads[-1].update(timing(i))
    Event.objects.bulk_create(
        [
            Event(trace=trace, seq=p["seq"], type=p["type"], line=p["seq"] + 1, payload=p)
            for p in payloads
        ],
        batch_size=2000,
    )
    run = AuditRun.objects.create(project=project, policies=["twincheck"], status="done")
    twin = {"type": "tool_call", "name": "twin", "arguments": {}}
    AuditResult.objects.create(
        run=run,
        trace=trace,
        policy="twincheck",
        applied=True,
        transition="unknown",
        continuation="truncated",
        record={"decisions": []},
        guarded_trajectory=payloads[: n // 2 | 1] + [twin],
    )
    return trace


def timed(client, url: str, repeat: int) -> tuple[list[float], list[float]]:  # type: ignore[no-untyped-def]
    """Wall and CPU (this process's) seconds per request, each sorted. On a shared machine the
    wall time follows the load; the CPU time is the server's own work."""
    times, cpu = [], []
    for _ in range(repeat + 2):
        t0, c0 = time.perf_counter(), time.process_time()
        assert client.get(url).status_code == 200
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return sorted(times[2:]), sorted(cpu[2:])  # the first two warm caches


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=40)
    ap.add_argument(
        "--timed", action="store_true", help="events carry ts, duration_ms, usage and cost_usd"
    )
    args = ap.parse_args()

    user, project, client = bench_site("bench-page", "bench-trace-page")
    from traces.models import Upload

    upload, _ = Upload.objects.get_or_create(
        project=project,
        content_hash="bench-trace-page",
        defaults={"filename": "bench", "size": 0, "source": "cli", "status": "done"},
    )
    print(f"trace page, {args.repeat} requests each (ms)")
    print(f"{'events':>8} {'median':>8} {'p95':>8} {'cpu med':>8} {'cpu p95':>8}")
    medians = {}
    for n in (10, args.events):
        trace = make_trace(project, upload, n, args.timed)
        times, cpu = timed(client, trace.get_absolute_url(), args.repeat)
        medians[n] = statistics.median(times)
        at95 = max(0, int(len(times) * 0.95) - 1)
        print(
            f"{n:8} {medians[n] * 1000:8.1f} {times[at95] * 1000:8.1f}"
            f" {statistics.median(cpu) * 1000:8.1f} {cpu[at95] * 1000:8.1f}"
        )
    print(f"ratio {args.events} / 10 events (median): {medians[args.events] / medians[10]:.2f}")


if __name__ == "__main__":
    main()
