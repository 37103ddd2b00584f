#!/usr/bin/env python
"""Throughput of the four guard policies (SPEC §9: ≥ 1,000 traces/s per process for 50-event
traces, no environment, no remote judge).

    .venv/bin/python bench/policies.py [--traces 10000] [--events 50] [--repeat 3] [--profile]

Generates a deterministic mix of synthetic 50-event traces (tool use with TwinCheck
certificates, pushback conversations, verify-repair loops, claim-checklist sessions), then
times, in this one process: a JSON round-trip of the same traces (baseline 1), building the
dataclass `Trace` from the dicts (baseline 2), and `Auditor.audit` with all four policies.
Each is timed ``--repeat`` times, the three interleaved, and the best of each is reported (a
single pass on a shared machine measured the neighbours as much as the code).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policies import Auditor, Trace  # noqa: E402
from tests.builders.synthetic import make_traces  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=10_000)
    ap.add_argument("--events", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3, help="passes; the best of each is reported")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    traces = make_traces(a.traces, a.events)
    n = len(traces)
    assert all(len(t) == a.events for t in traces)

    run_settings: dict[str, dict[str, Any]] = {
        "vrr": {"params": {"rho0": 0.2, "rho1": 0.15, "alpha": 0.3, "beta": 0.2, "prior": 0.6}}
    }
    auditor = Auditor(settings=run_settings)
    prof = cProfile.Profile() if a.profile else None
    json_s = build_s = audit_s = float("inf")
    for _ in range(max(a.repeat, 1)):
        t0 = time.perf_counter()
        for t in traces:
            json.loads(json.dumps(t))
        json_s = min(json_s, time.perf_counter() - t0)

        t0 = time.perf_counter()
        for t in traces:
            Trace.from_events(t)
        build_s = min(build_s, time.perf_counter() - t0)

        transitions: dict[str, int] = {}
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        for t in traces:
            for res in auditor.audit(t).values():
                transitions[res.transition] = transitions.get(res.transition, 0) + 1
        if prof:
            prof.disable()
        audit_s = min(audit_s, time.perf_counter() - t0)

    rate = n / audit_s
    print(
        f"traces: {n} x {a.events} events, policies: twincheck, checklist, vrr, commit; "
        f"best of {max(a.repeat, 1)}"
    )
    print(f"audit (4 policies):      {rate:10,.0f} traces/s  ({audit_s:.2f} s)")
    print(
        f"baseline json round-trip:{n / json_s:10,.0f} traces/s  ({json_s:.2f} s)  "
        f"audit/json time ratio {audit_s / json_s:.1f}x"
    )
    print(
        f"baseline Trace build:    {n / build_s:10,.0f} traces/s  ({build_s:.2f} s)  "
        f"audit/build time ratio {audit_s / build_s:.1f}x"
    )
    print(f"transitions: {dict(sorted(transitions.items()))}")
    sample = traces[: min(n, 2000)]
    for name in ("twincheck", "checklist", "vrr", "commit"):
        one = Auditor((name,), settings={k: v for k, v in run_settings.items() if k == name})
        t0 = time.perf_counter()
        for t in sample:
            one.audit(t)
        print(f"  {name:<10} alone: {len(sample) / (time.perf_counter() - t0):10,.0f} traces/s")
    print(f"target >= 1,000 traces/s: {'met' if rate >= 1000 else 'NOT met'}")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
