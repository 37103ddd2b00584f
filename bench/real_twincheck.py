#!/usr/bin/env python
"""TwinCheck on real traces: per file and per certificate — held, with twin, judged, accepted,
rescue, harm, unknown — plus the actor pass rate and, for BFCL, whether exact replay reproduces
the recorded verdicts (the run's ``*_score.json``).

    .venv/bin/python bench/real_twincheck.py                      # all defaults below
    .venv/bin/python bench/real_twincheck.py --bfcl /work/realdata/bfcl/*/ --tau none
    .venv/bin/python bench/real_twincheck.py --show accepted      # print every accepted decision

Files are converted with the project's importers (``traces.importers``, plain Python) and
audited with ``policies`` (+ ``BFCLEnvironment`` for BFCL, so outcomes are spliced; τ-bench has
no environment, so accepted replacements are ``unknown``). Nothing here is a test: the BFCL runs
in /work/realdata are for measurement only.

Columns: ``held`` = a certificate's preconditions held at a call; ``twin`` = a twin was built
and passed the structural checks; ``judged`` = the judge gave a verdict in both orders (did not
abstain or fail); ``accepted`` = the gate replaced the call; ``rescue``/``harm``/``unknown`` =
the transition of traces whose first accepted replacement came from that certificate.
"""

from __future__ import annotations

import argparse
import glob
import io
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policies import Auditor  # noqa: E402
from traces.importers import IMPORTERS, ImportReport  # noqa: E402

BFCL_DEFAULT = "/work/realdata/bfcl/*/"
TAU_DEFAULT = "/work/shared/data/tau-bench/*.json,/work/shared/data/tau2-bench/*.json"
COLS = ("held", "twin", "judged", "accepted", "rescue", "harm", "unknown")


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


class Tally:
    def __init__(self) -> None:
        self.per_cert: dict[str, Counter[str]] = defaultdict(Counter)
        self.n = 0
        self.actor_known = 0
        self.actor_pass = 0
        self.verdicts = 0
        self.verdict_mismatch: list[str] = []
        self.reasons: Counter[str] = Counter()
        self.accepted: list[dict[str, Any]] = []
        self.continuations: Counter[str] = Counter()
        self.accepted_on_failure = 0
        self.accepted_known_actor = 0
        self.gate: list[tuple[float, bool]] = []

    def add(self, trace_id: str, res: Any, failed_ids: set[str] | None) -> None:
        self.n += 1
        rec = res.record
        if res.actor_success is not None:
            self.actor_known += 1
            self.actor_pass += bool(res.actor_success)
            self.gate.append((float(rec.get("gate_score", 0.0)), not res.actor_success))
        if failed_ids is not None:
            task = trace_id.split(":", 1)[-1]
            self.verdicts += 1
            if res.actor_success is not (task not in failed_ids):
                self.verdict_mismatch.append(task)
        for d in rec.get("decisions", []):
            cert = (d.get("certificate") or {}).get("name", "?")
            c = self.per_cert[cert]
            c["held"] += 1
            checks = d.get("checks") or {}
            twin_ok = bool(d.get("twin")) and bool(checks.get("passed"))
            c["twin"] += twin_ok
            judgments = d.get("judgments") or []
            judged = len(judgments) == 2 and not any(
                j.get("error") or j.get("abstained") for j in judgments
            )
            c["judged"] += judged
            gate = d.get("gate") or {}
            if gate.get("replace"):
                c["accepted"] += 1
                c[res.transition if res.transition != "same" else "same"] += 1
                self.continuations[res.continuation] += 1
                if res.actor_success is not None:
                    self.accepted_known_actor += 1
                    self.accepted_on_failure += not res.actor_success
                self.accepted.append(
                    {
                        "trace": trace_id,
                        "certificate": d.get("certificate"),
                        "call": d.get("call"),
                        "twin": d.get("twin"),
                        "transition": res.transition,
                        "continuation": res.continuation,
                        "continuation_reason": rec.get("continuation_reason"),
                        "actor_success": res.actor_success,
                        "guarded_success": res.guarded_success,
                    }
                )
            else:
                self.reasons[_reason_key(str(gate.get("reason", d.get("twin_reason", ""))))] += 1

    def merge(self, other: Tally) -> None:
        for k, c in other.per_cert.items():
            self.per_cert[k].update(c)
        self.n += other.n
        self.actor_known += other.actor_known
        self.actor_pass += other.actor_pass
        self.verdicts += other.verdicts
        self.verdict_mismatch += other.verdict_mismatch
        self.reasons.update(other.reasons)
        self.accepted += other.accepted
        self.continuations.update(other.continuations)
        self.accepted_on_failure += other.accepted_on_failure
        self.accepted_known_actor += other.accepted_known_actor
        self.gate += other.gate


def _reason_key(reason: str) -> str:
    for cut in (" (", ":", " <", " ≥"):
        if cut in reason:
            reason = reason.split(cut)[0]
    return reason


def print_tally(title: str, t: Tally, detail: bool = False) -> None:
    pass_rate = f"{t.actor_pass}/{t.actor_known}" if t.actor_known else "n/a"
    repro = ""
    if t.verdicts:
        repro = (
            f"  exact replay = recorded verdicts: "
            f"{t.verdicts - len(t.verdict_mismatch)}/{t.verdicts}"
            + (f" (mismatch: {t.verdict_mismatch[:5]})" if t.verdict_mismatch else "")
        )
    print(f"{title}: {t.n} traces, actor pass {pass_rate}{repro}")
    header = "    " + f"{'certificate':<24}" + "".join(f"{c:>9}" for c in COLS)
    print(header)
    total: Counter[str] = Counter()
    for cert in sorted(t.per_cert):
        c = t.per_cert[cert]
        total.update(c)
        print("    " + f"{cert:<24}" + "".join(f"{c[k]:>9}" for k in COLS))
    print("    " + f"{'all':<24}" + "".join(f"{total[k]:>9}" for k in COLS))
    if detail:
        if t.accepted_known_actor:
            print(
                f"    accepted on an actor failure: {t.accepted_on_failure}/"
                f"{t.accepted_known_actor}; rescued: {total['rescue']}/{total['accepted']}"
            )
        if t.gate:
            from policies.stats import average_precision, roc_auc

            scores = [s for s, _ in t.gate]
            fails = [f for _, f in t.gate]
            print(
                f"    gate ranking of actor failures: ROC-AUC {roc_auc(scores, fails):.3f}, "
                f"AP {average_precision(scores, fails):.3f}, prevalence "
                f"{sum(fails) / len(fails):.3f}"
            )
        if t.continuations:
            print(f"    continuations of accepted: {dict(t.continuations)}")
        if t.reasons:
            print(f"    not accepted, by reason: {dict(t.reasons.most_common(8))}")


def run_bfcl(dirs: list[Path], auditor_kwargs: dict[str, Any], show: str, limit: int) -> Tally:
    from policies.env_bfcl import BFCLEnvironment

    grand = Tally()
    for d in dirs:
        run = d.name
        model = run.split("__", 1)[-1]
        for result in sorted(d.glob("BFCL_v4_multi_turn_*_result.json")):
            failed = recorded_failures(result)
            auditor = Auditor(("twincheck",), environment=BFCLEnvironment(), **auditor_kwargs)
            tally = Tally()
            t0 = time.perf_counter()
            name = f"result/{model}/multi_turn/{result.name}"
            for i, events in enumerate(import_file(result, "bfcl", name)):
                if limit and i >= limit:
                    break
                res = auditor.audit(events)["twincheck"]
                tally.add(events[0]["trace_id"], res, failed)
            category = result.name.removeprefix("BFCL_v4_multi_turn_").removesuffix("_result.json")
            print_tally(f"{run} {category} [{time.perf_counter() - t0:.0f}s]", tally)
            _show(tally, show)
            grand.merge(tally)
    return grand


def run_tau(files: list[Path], auditor_kwargs: dict[str, Any], show: str, limit: int) -> Tally:
    grand = Tally()
    auditor = Auditor(("twincheck",), **auditor_kwargs)
    for f in files:
        tally = Tally()
        for i, events in enumerate(import_file(f, "tau_bench")):
            if limit and i >= limit:
                break
            res = auditor.audit(events)["twincheck"]
            tally.add(events[0]["trace_id"], res, None)
        print_tally(f"{f.parent.name}/{f.name}", tally)
        _show(tally, show)
        grand.merge(tally)
    return grand


def _show(t: Tally, show: str) -> None:
    if show != "accepted":
        return
    for a in t.accepted:
        print("      ACCEPTED", json.dumps(a, default=str)[:900])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bfcl", nargs="*", default=[BFCL_DEFAULT], help="run directories (globs)")
    ap.add_argument("--tau", default=TAU_DEFAULT, help="comma-separated globs, or 'none'")
    ap.add_argument("--judge", default="heuristic")
    ap.add_argument("--show", default="", choices=("", "accepted"))
    ap.add_argument("--limit", type=int, default=0, help="traces per file (0 = all)")
    a = ap.parse_args()
    kwargs: dict[str, Any] = {"judge": a.judge}
    dirs = sorted({Path(p) for g in a.bfcl if g != "none" for p in glob.glob(g)})
    bfcl = run_bfcl([d for d in dirs if d.is_dir()], kwargs, a.show, a.limit)
    tau_files = (
        []
        if a.tau == "none"
        else sorted({Path(p) for g in a.tau.split(",") for p in glob.glob(g.strip())})
    )
    tau = run_tau(tau_files, kwargs, a.show, a.limit)
    print()
    if bfcl.n:
        print_tally("BFCL, all runs", bfcl, detail=True)
    if tau.n:
        print_tally("tau-bench + tau2-bench", tau, detail=True)


if __name__ == "__main__":
    main()
