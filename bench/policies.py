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
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policies import Auditor, Trace  # noqa: E402

SCHEMA = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
TOOLS = [
    {"name": "lock_account", "parameters": SCHEMA},
    {"name": "unlock_account", "parameters": SCHEMA},
    {"name": "get_account", "parameters": SCHEMA, "read_only": True},
    {
        "name": "set_payment",
        "parameters": {
            "type": "object",
            "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
            "required": ["key", "value"],
        },
    },
]


def tool_trace(rng: random.Random, tid: str, n: int) -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = [
        {
            "trace_id": tid,
            "type": "trace",
            "tools": TOOLS,
            "task": {"id": tid, "category": "tools"},
            "outcome": {"success": rng.random() < 0.5},
        }
    ]
    turn = 0
    ev.append(
        {
            "trace_id": tid,
            "type": "message",
            "role": "user",
            "turn": 0,
            "content": "Please lock account acc_1 and use card 8107 for acc_2",
        }
    )
    k = 0
    while len(ev) < n - 1:
        k += 1
        r = rng.random()
        if r < 0.05:
            name, args = "unlock_account", {"key": "acc_1"}
        elif r < 0.3:
            name, args = "lock_account", {"key": f"acc_{rng.randint(1, 3)}"}
        elif r < 0.6:
            name, args = "get_account", {"key": f"acc_{rng.randint(1, 3)}"}
        else:
            name, args = (
                "set_payment",
                {"key": "acc_2", "value": rng.choice(["card_4332", "card_8107"])},
            )
        status = "error" if rng.random() < 0.15 else "ok"
        content: Any = {"key": args["key"], "cards": ["card_4332", "card_8107"]}
        ev.append(
            {
                "trace_id": tid,
                "type": "tool_call",
                "call_id": f"c{k}",
                "name": name,
                "arguments": args,
                "turn": turn,
            }
        )
        ev.append(
            {
                "trace_id": tid,
                "type": "tool_result",
                "call_id": f"c{k}",
                "status": status,
                "content": content,
                "turn": turn,
            }
        )
    ev.append({"trace_id": tid, "type": "message", "role": "assistant", "content": "Done."})
    return ev[:n]


def pushback_trace(rng: random.Random, tid: str, n: int) -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = [
        {"trace_id": tid, "type": "trace", "task": {"id": tid, "category": "pushback"}},
        {"trace_id": tid, "type": "message", "role": "user", "content": "Capital of Australia?"},
    ]
    correct = rng.random() < 0.7
    i = 0
    while len(ev) < n:
        if i:
            ev.append(
                {
                    "trace_id": tid,
                    "type": "message",
                    "role": "user",
                    "turn": i,
                    "content": "Are you absolutely sure?",
                    "feedback": {"kind": "challenge"},
                    "labels": {"valid": False},
                }
            )
            if rng.random() < 0.3:
                correct = not correct
        ev.append(
            {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"a{i}",
                "turn": i,
                "content": "Canberra" if correct else "Sydney",
                "labels": {"correct": correct},
            }
        )
        i += 1
    return ev[:n]


def loop_trace(rng: random.Random, tid: str, n: int) -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = [
        {"trace_id": tid, "type": "trace", "task": {"id": tid, "category": "repair"}}
    ]
    valid = rng.random() < 0.6
    k = 0
    while len(ev) < n - 1:
        ev.append(
            {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"{tid}-{k}",
                "round": k,
                "content": f"impl {k}",
                "labels": {"valid": valid},
            }
        )
        acc = sum(rng.random() < (0.85 if valid else 0.2) for _ in range(5))
        ev.append(
            {
                "trace_id": tid,
                "type": "verification",
                "candidate_id": f"{tid}-{k}",
                "round": k,
                "accepts": acc,
                "votes": 5,
                "verifier": "tests",
            }
        )
        valid = (rng.random() >= 0.2) if valid else (rng.random() < 0.3)
        k += 1
    ev.append({"trace_id": tid, "type": "check", "name": "hidden", "passed": valid})
    return ev[:n]


def claims_trace(rng: random.Random, tid: str, n: int) -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = [
        {"trace_id": tid, "type": "trace", "task": {"id": tid, "category": "coding"}},
        {"trace_id": tid, "type": "message", "role": "user", "content": "Add unicode support"},
    ]
    ok = rng.random() < 0.6
    i = 0
    while len(ev) < n:
        ev.append(
            {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"v{i}",
                "content": f"patch {i}",
                "labels": {"valid": ok},
            }
        )
        ev.append({"trace_id": tid, "type": "message", "role": "assistant", "content": "Done."})
        ev.append(
            {
                "trace_id": tid,
                "type": "claims",
                "claims": [
                    {
                        "id": "c1",
                        "text": "the parser handles unicode input",
                        "confidence": rng.choice([0.3, 0.6, 0.95]),
                        "evidence": [{"kind": "test", "ref": "t1", "passed": True}],
                    },
                    {"id": "c2", "text": "docs mention the new flag", "confidence": 0.7},
                ],
            }
        )
        valid_fb = rng.random() < 0.4
        ev.append(
            {
                "trace_id": tid,
                "type": "message",
                "role": "user",
                "content": "The parser breaks on unicode input",
                "feedback": {"kind": "bug_report"},
                "labels": {"valid": valid_fb},
            }
        )
        if rng.random() < 0.4:
            ok = not ok
        i += 1
    return ev[:n]


KINDS = [tool_trace, pushback_trace, loop_trace, claims_trace]


def make_traces(count: int, n_events: int, seed: int = 0) -> list[list[dict[str, Any]]]:
    rng = random.Random(seed)
    return [KINDS[i % 4](rng, f"b{i}", n_events) for i in range(count)]


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
