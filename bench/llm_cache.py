#!/usr/bin/env python
"""What the model cache's hit path adds to an audit (target: < 10 % of an audit's wall time).

    .venv/bin/python bench/llm_cache.py [--traces 4000] [--events 50]

Same synthetic traces as bench/policies.py (tests/builders/synthetic.py), all four policies.
Times, in this one process: the offline audit with the heuristic judge (baseline), then the
same audit with the ``llm`` judge served entirely from a warm cache by an offline client (no
network), once with the in-memory cache and once with the file cache. The cache is warmed first
against the scripted fake server (tests/fakes), which is not timed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policies import Auditor, Trace  # noqa: E402
from policies.llm import FileCache, MemoryCache, ModelClient, ModelConfig  # noqa: E402
from policies.llm.judge import LLMJudge  # noqa: E402
from policies.llm.netguard import AddressGuard
from tests.builders.synthetic import make_traces  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI, Reply  # noqa: E402


def verdict(body: dict[str, Any]) -> Reply:
    user = body["messages"][-1]["content"]
    a = next(x for x in user.splitlines() if x.startswith("Candidate A:"))
    good = "B" if "unlock" in a or "set_payment" in a else "A"
    bad = "A" if good == "B" else "B"
    return Reply.text(
        json.dumps(
            {
                "scores": {good: 4, bad: 1},
                "fatal": {good: False, bad: True},
                "prefer": good,
                "confidence": 0.9,
            }
        )
    )


def timed(auditor: Auditor, traces: list[Trace]) -> float:
    start = time.perf_counter()
    for t in traces:
        auditor.audit(t)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=4000)
    ap.add_argument("--events", type=int, default=50)
    args = ap.parse_args()
    traces = [Trace.from_events(ev) for ev in make_traces(args.traces, args.events)]

    mem = MemoryCache()
    with tempfile.TemporaryDirectory() as tmp:
        files = FileCache(tmp)
        server = FakeOpenAI(verdict).start()
        try:
            cfg = ModelConfig(base_url=server.url, model="bench")
            local = AddressGuard(["127.0.0.1"])  # the scripted server is on loopback
            for cache in (mem, files):
                timed(Auditor(judge=LLMJudge(ModelClient(cfg, cache, guard=local))), traces)
            warm_requests = server.count
        finally:
            server.stop()
        # the same endpoint's answers: the cache is keyed by its URL too
        offline = ModelConfig(base_url=server.url, model="bench", offline=True)
        base = timed(Auditor(), traces)
        runs = {}
        for name, cache in (("memory cache", mem), ("file cache", files)):
            client = ModelClient(offline, cache)
            runs[name] = (timed(Auditor(judge=LLMJudge(client)), traces), client.stats.to_dict())

    print(f"traces: {len(traces)} x {args.events} events, all four policies")
    print(f"model calls to warm the caches: {warm_requests // 2} per cache")
    print(f"heuristic judge (baseline):   {base:7.2f} s  {len(traces) / base:8,.0f} traces/s")
    for name, (secs, stats) in runs.items():
        print(
            f"llm judge, {name + ':':14} {secs:7.2f} s  {len(traces) / secs:8,.0f} traces/s  "
            f"ratio {secs / base:.3f}  (calls {stats['calls']}, hits {stats['cache_hits']}, "
            f"failures {stats['failures']})"
        )


if __name__ == "__main__":
    main()
