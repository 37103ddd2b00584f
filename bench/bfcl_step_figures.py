#!/usr/bin/env python
"""Per-step latency and tokens on real BFCL result files (`traces.importers._bfcl_usage`): how
many traces get them on their steps, how many keep them on the header and why, and that every
trace's totals (`traces.totals`) are the sums of its lists, each model call counted once.

    .venv/bin/python bench/bfcl_step_figures.py PATH [PATH ...]

A PATH is a result file or a folder searched for `BFCL_v*_multi_turn_*_result.json`. Pure: no
database. Exits 1 when a trace's totals differ from its lists' sums.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from traces.importers import IMPORTERS, ImportReport  # noqa: E402
from traces.importers.bfcl import _nested_sum  # noqa: E402
from traces.totals import totals_of  # noqa: E402

TOKENS = (("input_token_count", "input_tokens"), ("output_token_count", "output_tokens"))


def files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out += sorted(p.rglob("BFCL_v*_multi_turn_*_result.json")) if p.is_dir() else [p]
    return out


def check(events: list[dict[str, Any]], record: dict[str, Any]) -> list[str]:
    """What differs between the trace's totals and the record's sums ([] when nothing)."""
    totals, wrong = totals_of(events), []
    latency = _nested_sum(record.get("latency"))
    if latency is not None and not math.isclose(totals["duration_ms"], latency * 1000):
        wrong.append(f"duration {totals['duration_ms']} != {latency * 1000}")
    for source, column in TOKENS:
        total = _nested_sum(record.get(source))
        if total is not None and float(total).is_integer() and totals[column] != total:
            wrong.append(f"{column} {totals[column]} != {total}")
    return wrong


def main() -> int:
    counts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    bad = 0
    for path in files(sys.argv[1:]):
        records = {}
        for line in path.read_bytes().splitlines():
            if line.strip():
                r = orjson.loads(line)
                records[f"bfcl:{r.get('id')}"] = r
        report = ImportReport(format="bfcl", filename=str(path))
        with path.open("rb") as stream:
            events = [se.event for se in IMPORTERS["bfcl"].convert(stream, report)]
        by_trace: dict[str, list[dict[str, Any]]] = {}
        for e in events:
            by_trace.setdefault(e["trace_id"], []).append(e)
        counts["files"] += 1
        counts["record errors"] += len(report.errors)
        counts["empty model responses (steps)"] += report.flags.get("empty_model_response", 0)
        for tid, evs in by_trace.items():
            record, head = records[tid], evs[0]
            counts["traces"] += 1
            on_steps = {k for e in evs[1:] for k in ("duration_ms", "usage") if k in e}
            if isinstance(record.get("result"), str):
                counts["inference errors (no steps)"] += 1
            elif on_steps == {"duration_ms", "usage"}:
                counts["latency and tokens on the steps"] += 1
            elif on_steps:
                counts["only " + ("latency" if "duration_ms" in on_steps else "tokens")] += 1
            unmatched = head.get("meta", {}).get("step_figures_unmatched") or {}
            counts["traces with a list kept on the header"] += bool(unmatched)
            for source, why in unmatched.items():
                reasons[f"{source}: {why}"] += 1
            wrong = check(evs, record)
            if wrong:
                bad += 1
                print(f"{path}: {tid}: {'; '.join(wrong)}")
    for key, n in sorted(counts.items()):
        print(f"{n:7d}  {key}")
    for why, n in reasons.most_common(20):
        print(f"{n:7d}  kept on the header — {why}")
    print(f"{bad:7d}  traces whose totals differ from their lists' sums")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
