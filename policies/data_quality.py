"""What import flagged in a trace, and how a run's decisions on flagged traces came out.

Importers keep suspicious data in the trace and flag it rather than drop it: a repair-log candidate
for another task (a *foreign candidate*, `policies.repair_candidates`), a recorded task that differs
from the installed benchmark's (header ``meta.task_drift``; ``meta.task_not_found`` when the
installed release has no such task), a result file of another benchmark release than the installed
one (header ``meta.recorded_release`` ≠ ``meta.installed_release``; scored against its own
release's task where the importer keeps it, ``meta.task_release``), a task whose ground truth
changed between the releases the run may come from (header ``meta.ground_truth_changed``), a run
of an earlier release that records no user turn to tell which of its tasks it was run on (header
``meta.task_unverified``), a reply that is a harness's error message rather than the model's
answer (event ``meta.harness_error``), a step whose calls ran in parallel (the step's first
call's ``meta.parallel_calls``), and a model call that answered nothing, after which the harness
went on to the next turn (BFCL's empty step, event ``meta.empty_response``).

`trace_flags` reads them once per trace; the audit writes them into every policy's record
(``import_flags``) and `FlagFold` counts, per policy, how many of the flagged traces' decisions
are unknown or not applicable and why — the run's data-quality section.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from .repair_candidates import foreign_candidate_ids
from .trace import Candidate, Trace

#: The flags in the order the data-quality section lists them, each with its label.
FLAGS: dict[str, str] = {
    "foreign_candidate": "foreign candidates (a program for another task)",
    "task_drift": "task differs from the installed benchmark",
    "task_not_installed": "task not in the installed benchmark",
    "recorded_release_differs": "recorded with another benchmark release",
    "ground_truth_changed": "ground truth changed since the run's release",
    "task_unverified": "task version unverified (no recorded user turns)",
    "harness_error": "harness errors taken for replies",
    "parallel_step": "steps with parallel calls",
    "empty_reply": "empty model replies (the harness went on to the next turn)",
}

#: Where a result record keeps its trace's flags: {flag: how many events or 1 for the trace}.
RECORD_KEY = "import_flags"


def trace_flags(trace: Trace) -> dict[str, int]:
    """The trace's import flags, each with how many of its events carry it (1 for a flag of
    the whole trace); flags the trace does not have are left out."""
    meta = trace.header.meta
    out: dict[str, int] = {}
    # the policies' rule and the importer's flag (`meta.foreign_candidate`), each candidate once
    foreign = set(foreign_candidate_ids(trace))
    foreign.update(
        e.candidate_id or f"@{e.index}"
        for e in trace.events
        if isinstance(e, Candidate) and e.meta and e.meta.get("foreign_candidate")
    )
    if foreign:
        out["foreign_candidate"] = len(foreign)
    if meta.get("task_drift"):
        out["task_drift"] = 1
    if meta.get("task_not_found"):
        out["task_not_installed"] = 1
    recorded, installed = meta.get("recorded_release"), meta.get("installed_release")
    if recorded and installed and recorded != installed:
        out["recorded_release_differs"] = 1
    if meta.get("ground_truth_changed"):
        out["ground_truth_changed"] = 1
    if meta.get("task_unverified"):
        out["task_unverified"] = 1
    errors = parallel = empty = 0
    for e in trace.events:
        m = e.meta
        if m:
            errors += bool(m.get("harness_error"))
            parallel += bool(m.get("parallel_calls"))
            empty += bool(m.get("empty_response"))
    if errors:
        out["harness_error"] = errors
    if parallel:
        out["parallel_step"] = parallel
    if empty:
        out["empty_reply"] = empty
    return out


class FlagFold:
    """Per flag, over one policy's results in a run: how many traces have it (``traces``) and
    how many flagged events (``events``), and of those traces' decisions how many are
    ``unknown`` and ``not_applicable``, with their reasons. A few counters per flag."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter[str]] = {}
        self.reasons: dict[str, Counter[str]] = {}

    def add(self, row: Mapping[str, Any], not_applicable: str | None) -> None:
        record = row.get("record") or {}
        flags = record.get(RECORD_KEY) if isinstance(record, Mapping) else None
        if not flags or not isinstance(flags, Mapping):
            return
        unknown = row.get("transition") == "unknown"
        reason = (
            not_applicable
            if not_applicable is not None
            else str(row.get("unknown_reason") or record.get("unknown_reason") or "unknown")
            if unknown
            else None
        )
        for flag, n in flags.items():
            c = self.counts.setdefault(str(flag), Counter())
            c["traces"] += 1
            c["events"] += int(n) if isinstance(n, int) else 1
            c["unknown"] += unknown
            c["not_applicable"] += not_applicable is not None
            if reason is not None:
                self.reasons.setdefault(str(flag), Counter())[reason] += 1

    def result(self) -> dict[str, dict[str, Any]]:
        """{flag: {traces, events, unknown, not_applicable, reasons}}, flags in `FLAGS` order."""
        order = {f: i for i, f in enumerate(FLAGS)}
        return {
            flag: {
                "traces": c["traces"],
                "events": c["events"],
                "unknown": c["unknown"],
                "not_applicable": c["not_applicable"],
                "reasons": dict(self.reasons.get(flag, Counter()).most_common()),
            }
            for flag, c in sorted(self.counts.items(), key=lambda kv: (order.get(kv[0], 99), kv[0]))
        }


def data_quality_section(
    summary: Mapping[str, Any] | None, policies: list[str]
) -> dict[str, Any] | None:
    """A run's data-quality section from its summary: per flag its label, how many traces and
    events carry it, and per policy (a list in the run's order) how many of those traces'
    decisions are unknown or not applicable, with the reasons (``flags`` empty: import flagged
    nothing). None for a summary made without the counts."""
    summary = summary or {}
    flags: dict[str, dict[str, Any]] = {}
    counted = False
    for policy in policies:
        part = summary.get(policy)
        per_flag = part.get("data_quality") if isinstance(part, Mapping) else None
        counted = counted or per_flag is not None
        for flag, c in (per_flag or {}).items():
            entry = flags.setdefault(
                flag,
                {"flag": flag, "label": FLAGS.get(flag, flag), "traces": 0, "events": 0},
            )
            entry["traces"] = max(entry["traces"], c.get("traces", 0))
            entry["events"] = max(entry["events"], c.get("events", 0))
            entry.setdefault("policies", {})[policy] = {
                "policy": policy,
                "unknown": c.get("unknown", 0),
                "not_applicable": c.get("not_applicable", 0),
                "reasons": c.get("reasons") or {},
            }
    if not counted:
        return None
    order = {f: i for i, f in enumerate(FLAGS)}
    rows = sorted(flags.values(), key=lambda e: (order.get(e["flag"], 99), e["flag"]))
    for e in rows:  # in the run's order of policies; a policy without the flag counts zero
        got = e["policies"]
        e["policies"] = [
            got.get(p) or {"policy": p, "unknown": 0, "not_applicable": 0, "reasons": {}}
            for p in policies
        ]
    return {"flags": rows}
