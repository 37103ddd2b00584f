#!/usr/bin/env python
"""Ingest throughput into PostgreSQL, beside the floor measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trace_auditor_bench \
        .venv/bin/python bench/ingest.py [--events 200000] [--repeat 3]

Generates N synthetic v1 events of about 1 KB (100-event traces), then, in one process:
- floor: parse every line with orjson and COPY the raw lines into a one-column table (both a
  `jsonb` and a `text` column are measured; jsonb is the fair floor, as events are stored as
  jsonb and the server must parse them either way);
- ours: `upload_process`, the task function a Celery worker runs — read, parse, validate,
  group, and COPY into the events table in batched transactions.
Reports events/s and the ratio ours/floor (time), best of --repeat runs each.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")


def make_events(n: int, seed: int = 0) -> list[bytes]:
    rng = random.Random(seed)
    words = "the agent calls a tool with arguments and reads the result before replying".split()
    lines: list[bytes] = []
    per_trace = 100
    for t in range(n // per_trace + 1):
        tid = f"bench-{t:07d}"
        for i in range(per_trace):
            if len(lines) >= n:
                return lines
            if i == 0:
                ev = {
                    "trace_id": tid,
                    "type": "trace",
                    "agent": "bench",
                    "model": "m",
                    "task": {"id": f"task-{t}", "benchmark": "synthetic", "category": "c"},
                    "outcome": {"success": rng.random() < 0.5, "reward": 1.0},
                    "meta": {"pad": " ".join(rng.choices(words, k=150))},
                }
            elif i % 3 == 1:
                ev = {
                    "trace_id": tid,
                    "type": "tool_call",
                    "seq": i,
                    "call_id": f"c{i}",
                    "name": rng.choice(["ls", "cd", "cat", "grep"]),
                    "arguments": {
                        "path": f"/home/u/{i}",
                        "query": " ".join(rng.choices(words, k=140)),
                    },
                }
            elif i % 3 == 2:
                ev = {
                    "trace_id": tid,
                    "type": "tool_result",
                    "seq": i,
                    "call_id": f"c{i - 1}",
                    "status": "ok",
                    "content": " ".join(rng.choices(words, k=160)),
                }
            else:
                ev = {
                    "trace_id": tid,
                    "type": "message",
                    "seq": i,
                    "role": "assistant",
                    "content": " ".join(rng.choices(words, k=160)) + "\tdone \\ ok",
                }
            if i == 0:
                ev["seq"] = 0
            lines.append(orjson.dumps(ev))
    return lines


def floor(lines: list[bytes], column: str) -> float:
    from django.db import connection, transaction

    with connection.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS bench_floor_{column}")
        cur.execute(f"CREATE TABLE bench_floor_{column} (doc {column})")
    start = time.perf_counter()
    for line in lines:
        orjson.loads(line)
    with transaction.atomic(), connection.cursor() as cur:
        with cur.copy(f"COPY bench_floor_{column} (doc) FROM STDIN") as copy:
            buf = bytearray()
            for line in lines:
                # COPY text format: escape backslashes (JSON has no raw tabs or newlines here).
                buf += line.replace(b"\\", b"\\\\").replace(b"\t", b"\\t")
                buf += b"\n"
                if len(buf) > 1 << 20:
                    copy.write(buf)
                    buf = bytearray()
            copy.write(buf)
    elapsed = time.perf_counter() - start
    with connection.cursor() as cur:
        cur.execute(f"DROP TABLE bench_floor_{column}")
    return elapsed


def ours(path: Path, run: int) -> tuple[float, int]:
    from traces.models import Project, Upload
    from traces.services import upload_create, upload_process

    project = Project.objects.create(name=f"bench-{os.getpid()}-{run}-{time.time_ns()}")
    with path.open("rb") as fh:
        upload, _ = upload_create(
            project=project,
            fileobj=fh,
            filename=path.name,
            fmt="v1",
            source=Upload.Source.CLI,
            enqueue=False,
        )
    start = time.perf_counter()
    result = upload_process(upload_id=upload.pk)
    elapsed = time.perf_counter() - start
    assert result is not None and result.status == "done" and result.error_count == 0, (
        result.errors[:3]
    )
    events = result.events
    project.delete()
    return elapsed, events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection

    if connection.vendor != "postgresql":
        sys.exit("set DATABASE_URL=postgres://… (this benchmark measures PostgreSQL COPY)")
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

    lines = make_events(args.events)
    size = sum(len(x) + 1 for x in lines)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        n = len(lines)
        print(f"{n} events, {size / n:.0f} bytes each on average, {size / 1048576:.1f} MiB")
        floor_jsonb = min(floor(lines, "jsonb") for _ in range(args.repeat))
        floor_text = min(floor(lines, "text") for _ in range(args.repeat))
        runs = [ours(path, r) for r in range(args.repeat)]
        t_ours = min(t for t, _ in runs)
        assert all(e == n for _, e in runs)
    rate = lambda t: n / t  # noqa: E731
    jsonb, text = rate(floor_jsonb), rate(floor_text)
    print(f"floor (orjson parse + COPY raw lines into a jsonb column): {jsonb:>9,.0f} events/s")
    print(f"floor (orjson parse + COPY raw lines into a text column):  {text:>9,.0f} events/s")
    print(
        f"ours  (upload_process: parse, validate, group, COPY):      {rate(t_ours):>9,.0f} events/s"
    )
    print(
        f"ratio ours/floor time: {t_ours / floor_jsonb:.2f}x (jsonb floor), "
        f"{t_ours / floor_text:.2f}x (text floor); target <= 2x and >= 10,000 events/s"
    )


if __name__ == "__main__":
    main()
