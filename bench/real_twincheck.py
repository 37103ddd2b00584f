#!/usr/bin/env python
"""TwinCheck on real traces: per file and per certificate — held, with twin, judged, accepted,
rescue, harm, unknown — plus the actor pass rate and, for BFCL, whether exact replay reproduces
the recorded verdicts (the run's ``*_score.json``: line 1 the summary, then one line per failed
task).

    .venv/bin/python bench/real_twincheck.py                      # all defaults below
    .venv/bin/python bench/real_twincheck.py --bfcl /work/realdata/bfcl/*/ --tau none
    .venv/bin/python bench/real_twincheck.py --show accepted      # every accepted decision
    .venv/bin/python bench/real_twincheck.py --control            # + the no-verifier control

Files are converted with the project's importers (``traces.importers``, plain Python) and
audited with ``policies`` (+ ``BFCLEnvironment`` for BFCL, so outcomes are spliced; τ-bench has
no environment, so accepted replacements are ``unknown``). The summary per benchmark is
`policies.stats.twincheck_report.twincheck_report` (Tables 1–3, Fig. 2) and the heuristic judge's
precision: an accepted replacement counts as correct when the actor's task failed, and as a
rescue when the guarded outcome is a success. Nothing here is a test: the BFCL runs in
/work/realdata are for measurement only.

Columns: ``held`` = a certificate's preconditions held at a call; ``twin`` = a twin was built
and passed the structural checks; ``judged`` = the judge gave a verdict in both orders (no
error, no abstention); ``accepted`` = the gate replaced the call; ``rescue``/``harm``/``same``/
``unknown`` = the transition of traces whose accepted replacement came from that certificate.
"""

from __future__ import annotations

import argparse
import glob
import io
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policies import Auditor  # noqa: E402
from policies.stats.twincheck_report import certificate_counts, twincheck_report  # noqa: E402
from traces.importers import IMPORTERS, ImportReport  # noqa: E402

BFCL_DEFAULT = "/work/realdata/bfcl/*/"
TAU_DEFAULT = "/work/shared/data/tau-bench/*.json,/work/shared/data/tau2-bench/*.json"
COLS = ("held", "with_twin", "judged", "accepted", "rescue", "harm", "same", "unknown")
CONTROL = "TwinCheck without verifier (certificate + structural checks)"


def import_file(path: Path, fmt: str, name: str | None = None) -> Iterator[list[dict[str, Any]]]:
    """The traces of one file as lists of v1 event dicts, in file order."""
    report = ImportReport(format=fmt, filename=name or str(path))
    stream = io.BytesIO(path.read_bytes())
    stream.name = name or str(path)
    traces: dict[str, list[dict[str, Any]]] = {}
    for se in IMPORTERS[fmt].convert(stream, report):
        traces.setdefault(se.event["trace_id"], []).append(se.event)
    if report.errors:
        print(f"  {path.name}: {len(report.errors)} records not imported", file=sys.stderr)
    yield from traces.values()


def recorded_failures(result_path: Path) -> set[str] | None:
    score = result_path.with_name(result_path.name.replace("_result.json", "_score.json"))
    if not score.exists():
        return None
    lines = score.read_text().splitlines()
    return {json.loads(line)["id"] for line in lines[1:] if line.strip()}


class Group:
    """One benchmark's results: slim result dicts, categories, sources, verdict checks."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.control: list[dict[str, Any]] = []
        self.cats: list[str] = []
        self.sources: list[str] = []
        self.trace_ids: list[str] = []
        self.verdicts = 0
        self.mismatch: list[str] = []

    def extend(self, other: Group) -> None:
        self.rows += other.rows
        self.control += other.control
        self.cats += other.cats
        self.sources += other.sources
        self.trace_ids += other.trace_ids
        self.verdicts += other.verdicts
        self.mismatch += other.mismatch


def slim(res: Any) -> dict[str, Any]:
    d: dict[str, Any] = res.to_dict()
    d.pop("guarded_trajectory", None)
    return d


def audit_file(
    traces: Iterator[list[dict[str, Any]]],
    auditors: tuple[Any, Any | None],
    category: str,
    source: str,
    failed: set[str] | None,
    limit: int,
) -> Group:
    g = Group()
    main, control = auditors
    for i, events in enumerate(traces):
        if limit and i >= limit:
            break
        res = main.audit(events)["twincheck"]
        g.rows.append(slim(res))
        if control is not None:
            g.control.append(slim(control.audit(events)["twincheck"]))
        tid = events[0]["trace_id"]
        g.trace_ids.append(tid)
        g.cats.append(category)
        g.sources.append(source)
        if failed is not None:
            g.verdicts += 1
            if res.actor_success is not (tid.split(":", 1)[-1] not in failed):
                g.mismatch.append(tid)
    return g


def print_counts(title: str, g: Group, seconds: float) -> None:
    known = [r["actor_success"] for r in g.rows if r["actor_success"] is not None]
    line = f"{title}: {len(g.rows)} traces, actor pass {sum(known)}/{len(known)}"
    if g.verdicts:
        line += f", exact replay = recorded verdicts {g.verdicts - len(g.mismatch)}/{g.verdicts}"
        if g.mismatch:
            line += f" (mismatch: {g.mismatch[:5]})"
    print(f"{line} [{seconds:.0f}s]")
    print("    " + f"{'certificate':<24}" + "".join(f"{c:>10}" for c in COLS))
    for cert, c in certificate_counts(g.rows).items():
        print("    " + f"{cert:<24}" + "".join(f"{c[k]:>10}" for k in COLS))


def show(g: Group, what: str) -> None:
    if not what:
        return
    for r, tid, src in zip(g.rows, g.trace_ids, g.sources, strict=True):
        for d in r["record"]["decisions"]:
            gate = d.get("gate") or {}
            if what == "accepted" and not gate.get("replace"):
                continue
            out = {
                "trace": tid,
                "source": src,
                "actor_success": r["actor_success"],
                "guarded_success": r["guarded_success"],
                "transition": r["transition"] if gate.get("replace") else None,
                "continuation": r["continuation"] if gate.get("replace") else None,
                "continuation_reason": r["record"].get("continuation_reason"),
                "certificate": d["certificate"],
                "call": d["call"],
                "twin": d["twin"],
                "twin_reason": d.get("twin_reason"),
                "gate": gate.get("reason"),
                "judgments": [
                    {k: j.get(k) for k in ("prefer", "fatal_a", "fatal_b", "score_a", "score_b",
                                           "confidence", "reason")}
                    for j in d.get("judgments") or []
                ],
            }  # fmt: skip
            print("      " + what.upper(), json.dumps(out, default=str))


def summary(title: str, g: Group, n_boot: int) -> dict[str, Any]:
    controls = {CONTROL: g.control} if g.control else None
    rep = twincheck_report(g.rows, g.cats, controls, n_boot=n_boot)
    print(f"\n{title}: {rep['n_traces']} traces")
    print("    " + f"{'certificate':<24}" + "".join(f"{c:>10}" for c in COLS))
    for cert, c in rep["per_certificate"].items():
        print("    " + f"{cert:<24}" + "".join(f"{c[k]:>10}" for k in COLS))
    acc = [r for r in g.rows if r["continuation"] != "exact"]
    known = [r for r in acc if r["actor_success"] is not None]
    fails = sum(1 for r in known if not r["actor_success"])
    rescues = sum(1 for r in acc if r["transition"] == "rescue")
    harms = sum(1 for r in acc if r["transition"] == "harm")
    if acc:
        print(
            f"    judge precision: accepted on an actor failure {fails}/{len(known)}"
            f" = {fails / len(known) if known else float('nan'):.3f}; rescued {rescues}/{len(acc)}"
            f" = {rescues / len(acc):.3f}; harmed {harms}/{len(acc)}"
        )
    gate = rep["gate"]
    print(
        f"    gate (Fig. 2): ROC-AUC {gate['roc_auc']}, AP {gate['average_precision']}, "
        f"prevalence {gate['failure_prevalence']}, selected failures/successes/unknown "
        f"{gate['selected_failures']}/{gate['selected_successes']}/"
        f"{gate['selected_unknown_actor']}"
    )
    t1 = rep["table1"]
    print(
        f"    Table 1: n {t1['n']} (known {t1['n_known']}), actor {t1['actor_pct']}%, "
        f"TwinCheck {t1['guarded_pct']}%, delta {t1['delta_pp']} pp CI {t1['ci_pp']}, "
        f"rescue/harm {t1['rescue']}/{t1['harm']}, unknown {t1['unknown']}"
        + (f" (delta bounds {t1['delta_bounds_pp']})" if "delta_bounds_pp" in t1 else "")
    )
    for cat, row in rep["table2"].items():
        print(
            f"    Table 2 {cat}: actor {row['actor_pct']}%, TwinCheck {row['guarded_pct']}%, "
            f"delta {row['delta_pp']} CI {row['ci_pp']}, rescue/harm {row['rescue']}/"
            f"{row['harm']}, unknown {row['unknown']}"
        )
    for name, row in rep["table3"]["rows"].items():
        print(
            f"    Table 3 {name}: success {row['guarded_pct']}%, delta {row['delta_pp']} pp "
            f"CI {row['ci_pp']}, accepted {row['accepted']}, rescue/harm {row['rescue']}/"
            f"{row['harm']}, unknown {row['unknown']}"
        )
    print(f"    Table 3 not computed offline: {rep['table3']['not_computed']}")
    print(f"    kept the actor's call, by reason: {rep['rejections']}")
    print(f"    continuations of accepted: {rep['continuations']}")
    return rep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bfcl", nargs="*", default=[BFCL_DEFAULT], help="run directories (globs)")
    ap.add_argument("--tau", default=TAU_DEFAULT, help="comma-separated globs, or 'none'")
    ap.add_argument("--judge", default="heuristic")
    ap.add_argument("--show", default="", choices=("", "accepted", "held"))
    ap.add_argument("--limit", type=int, default=0, help="traces per file (0 = all)")
    ap.add_argument("--control", action="store_true", help="also run the no-verifier control")
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--json", help="write both reports to this file")
    a = ap.parse_args()

    def auditors(env: Any) -> tuple[Any, Any | None]:
        main = Auditor(("twincheck",), judge=a.judge, environment=env)
        if not a.control:
            return main, None
        off = {"twincheck": {"verify": False}}
        return main, Auditor(("twincheck",), off, judge=a.judge, environment=env)

    bfcl = Group()
    dirs = sorted({Path(p) for g in a.bfcl if g != "none" for p in glob.glob(g)})
    if dirs:
        from policies.environments.bfcl import BFCLEnvironment
    for d in dirs:
        model = d.name.split("__", 1)[-1]
        for result in sorted(d.glob("BFCL_v4_multi_turn_*_result.json")):
            cat = result.name.removeprefix("BFCL_v4_multi_turn_").removesuffix("_result.json")
            t0 = time.perf_counter()
            traces = import_file(result, "bfcl", f"result/{model}/multi_turn/{result.name}")
            g = audit_file(
                traces,
                auditors(BFCLEnvironment()),
                cat,
                f"{d.name}/{cat}",
                recorded_failures(result),
                a.limit,
            )
            print_counts(f"{d.name} {cat}", g, time.perf_counter() - t0)
            show(g, a.show)
            bfcl.extend(g)
    tau = Group()
    globs = [] if a.tau == "none" else [x.strip() for x in a.tau.split(",")]
    for f in sorted({Path(p) for x in globs for p in glob.glob(x)}):
        t0 = time.perf_counter()
        g = audit_file(import_file(f, "tau_bench"), auditors(None), f.stem, f.name, None, a.limit)
        print_counts(f"{f.parent.name}/{f.name}", g, time.perf_counter() - t0)
        show(g, a.show)
        tau.extend(g)
    reports = {}
    if bfcl.rows:
        reports["bfcl"] = summary("BFCL, all runs", bfcl, a.n_boot)
    if tau.rows:
        reports["tau"] = summary("tau-bench + tau2-bench", tau, a.n_boot)
    if a.json:
        Path(a.json).write_text(json.dumps(reports, indent=1))


if __name__ == "__main__":
    main()
