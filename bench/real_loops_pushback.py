#!/usr/bin/env python
"""The checklist, VRR and commit audits on real pushback and repair-loop runs.

    .venv/bin/python bench/real_loops_pushback.py [--data ../shared/data] [--execute]
        [--n-boot 500] [--limit N] [--json OUT] [--only NAME]

Converts the shared SYCON-Bench files (`traces.importers` "pushback") and LDB repair-run files
("repair_runs") to v1 events, audits every trace with the four policies (`policies.Auditor`;
VRR calibrated per file, i.e. per (model, verifier) group, as the app does) and prints, per
file and policy: applied, not applicable (by reason), rescue / harm / same / unknown, Δ with
its CI and bounds, and the policy's paper table. ``--execute`` labels every repair candidate by
running the record's hidden tests in the sandbox (`policies.sandbox.process`; it executes the files'
code in isolated processes), so VRR calibrates from executed labels.

Not a timed benchmark: it measures what the audits *report* on data no test has seen. Written
against the public API only, so the same script reports before and after a change.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policies import Auditor  # noqa: E402
from policies.stats.report import summarise_run  # noqa: E402
from policies.trace import Trace  # noqa: E402
from policies.vrr.calibration import calibrate, observations_from_traces  # noqa: E402
from traces.importers import IMPORTERS, ImportReport  # noqa: E402

POLICIES = ("twincheck", "checklist", "vrr", "commit")


def convert(path: Path, fmt: str) -> list[list[dict[str, Any]]]:
    report = ImportReport(format=fmt, filename=path.name)
    stream = io.BytesIO(path.read_bytes())
    stream.name = path.name  # type: ignore[attr-defined]
    by_trace: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for se in IMPORTERS[fmt].convert(stream, report):
        by_trace[se.event["trace_id"]].append(se.event)
    if report.errors:
        print(f"  {len(report.errors)} records rejected, first: {report.errors[0]}")
    return list(by_trace.values())


def executed_labels(traces: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Label every candidate by running the hidden tests in the sandbox (AFTER only)."""
    from policies.labels import apply_labels
    from policies.sandbox.code_tests import execute_hidden_tests
    from policies.sandbox.process import SandboxSettings

    t0 = time.perf_counter()
    labels, stats = execute_hidden_tests(traces, SandboxSettings(enabled=True), workers=2)
    out = [apply_labels(events, labels).events for events in traces]
    print(f"  sandbox: {stats} in {time.perf_counter() - t0:.1f}s")
    return out


def fmt_num(x: Any, spec: str = "+.3f") -> str:
    return format(x, spec) if isinstance(x, (int, float)) and not isinstance(x, bool) else "—"


def fmt_pair(p: Any, spec: str = "+.3f") -> str:
    if isinstance(p, (list, tuple)) and len(p) == 2:
        return f"[{fmt_num(p[0], spec)}, {fmt_num(p[1], spec)}]"
    return "—"


def print_summary(policy: str, s: dict[str, Any]) -> None:
    o = s.get("overall") or {}
    t = o.get("transitions") or {}
    na = s.get("not_applicable", o.get("not_applicable"))
    na_txt = ", ".join(f"{r}: {n}" for r, n in na.items()) if isinstance(na, dict) and na else "0"
    if na is None:
        na_txt = "(not reported)"
    print(
        f"  {policy:<10} traces {s.get('n_traces')}  applied {s.get('applied')}  "
        f"not applicable {na_txt}"
    )
    print(
        f"  {'':<10} rescue {t.get('rescue', 0)}  harm {t.get('harm', 0)}  "
        f"same {t.get('same', 0)}  unknown {t.get('unknown', 0)}"
        f"  not_applicable {t.get('not_applicable', '—')}"
    )
    delta = o.get("delta_known", o.get("delta"))
    print(
        f"  {'':<10} Δ {fmt_num(delta)} (known pairs {o.get('n_known', o.get('n_paired'))}, "
        f"unknown {o.get('n_unknown', '—')})  CI known {fmt_pair(o.get('ci_known', o.get('ci')))}"
        f"  bounds {fmt_pair(o.get('bounds'))}  CI with unknowns {fmt_pair(o.get('ci'))}"
        f"  excludes 0: {o.get('excludes_zero', '—')}"
    )
    for side in ("actor", "guarded"):
        c = o.get(f"{side}_counts")
        if isinstance(c, dict):
            print(f"  {'':<10} {side} successes {c.get('successes')} of known {c.get('known')}")
    table = s.get(policy) or s.get("paper_table")
    if table:
        print(f"  {'':<10} paper table: {json.dumps(table, default=str)}")


def audit_file(
    path: Path, fmt: str, execute: bool, n_boot: int, limit: int | None
) -> dict[str, Any]:
    print(f"\n== {path.name} ({fmt})")
    traces = convert(path, fmt)[:limit]
    if execute and fmt == "repair_runs":
        traces = executed_labels(traces)
    settings: dict[str, dict[str, Any]] = {}
    if fmt == "repair_runs":
        obs, transitions = observations_from_traces([Trace.from_events(e) for e in traces])
        cal = calibrate(obs, transitions, n_boot=n_boot, seed=0)
        cd = cal.to_dict()
        print(
            f"  calibration: params {json.dumps(cd['params'])} J {fmt_num(cd['j'], '.3f')}"
            f"  transitions {cd['transition_counts']}"
        )
        print(f"  intervals {json.dumps(cd['intervals'])}  notes {cd['notes']}")
        bounds = {n: cal.intervals[n] for n in ("alpha", "beta")}  # exact intervals
        settings["vrr"] = {
            "params": cal.params.to_dict(),
            "samples": list(cal.samples),
            "rate_lower": {n: lo for n, (lo, _) in bounds.items()},
            "rate_upper": {n: hi for n, (_, hi) in bounds.items()},
        }
    auditor = Auditor(POLICIES, settings)
    per_policy: dict[str, list[Any]] = {p: [] for p in POLICIES}
    cats: list[str] = []
    t0 = time.perf_counter()
    for events in traces:
        res = auditor.audit(events)
        for p in POLICIES:
            per_policy[p].append(res[p])
        cats.append(str(Trace.from_events(events).header.category or ""))
    print(f"  audited {len(traces)} traces in {time.perf_counter() - t0:.2f}s")
    out: dict[str, Any] = {}
    for p in POLICIES:
        s = summarise_run(per_policy[p], cats, n_boot=n_boot)
        out[p] = s
        print_summary(p, s)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = Path(__file__).resolve().parent.parent
    ap.add_argument("--data", type=Path, default=root.parent / "shared" / "data")
    ap.add_argument("--execute", action="store_true", help="label code candidates by sandbox")
    ap.add_argument("--n-boot", type=int, default=500)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json", type=Path, default=None, help="write all summaries here")
    ap.add_argument("--only", default="", help="audit only files whose name contains this")
    args = ap.parse_args()
    files = [(p, "pushback") for p in sorted((args.data / "sycon-bench").glob("*.jsonl"))]
    files += [(p, "repair_runs") for p in sorted((args.data / "ldb").glob("*.jsonl"))]
    files = [(p, fmt) for p, fmt in files if args.only in p.name]
    if not files:
        sys.exit(f"no data under {args.data}")
    everything = {
        p.name: audit_file(p, fmt, args.execute, args.n_boot, args.limit) for p, fmt in files
    }
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1, default=str))


if __name__ == "__main__":
    main()
