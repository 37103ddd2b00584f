"""What a run's traces took, used and cost, per model: total and mean duration, tokens and
cost over the traces that record each figure, and how many do not (`traces.totals` computes a
trace's figures at ingest; a figure no event gives is null, so it is counted as missing, never
as 0). The run page shows it and `audit --json` carries it."""

from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.db.models import Count, Exists, OuterRef, Sum

from auditor.runs.models import AuditResult, AuditRun
from common.figures import NONE, cost_text, duration_text, tokens_text
from policies.stats.report import NO_MODEL
from traces.models import Trace

# Name in the output → Trace column.
FIGURES = {
    "duration_ms": "duration_ms",
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "total_tokens": "total_tokens",
    "cost_usd": "cost_usd",
}


# Where the run's summary keeps them (beside its policies' tables; not a policy name).
SUMMARY_KEY = "trace_usage"


def trace_usage_per_model(run: AuditRun) -> list[dict[str, Any]]:
    """Per model of the run's traces (in model order): `traces`, and per figure its `total`,
    `mean` (over the traces that record it; None when none does), `known` and `missing`.

    Read from the run's summary, which `auditor.runs.summary.audit_run_summary` writes with
    them (`summary_entry`), so the run page reads no result. A summary written before it kept
    them is aggregated once and cached while the run is unchanged."""
    kept = ((run.summary or {}).get(SUMMARY_KEY) or {}).get("per_model")
    if isinstance(kept, list):
        return kept
    key = f"ta:run-trace-usage:{run.pk}:{run.status}:{run.traces_done}"
    rows = cache.get(key)
    if rows is None:
        rows = _aggregate(run)
        cache.set(key, rows, 3600)
    return rows


def summary_entry(run: AuditRun) -> dict[str, Any]:
    """What the run's summary keeps under `SUMMARY_KEY`: the figures per model, aggregated over
    the run's traces when the summary is written."""
    return {"per_model": _aggregate(run)}


def _aggregate(run: AuditRun) -> list[dict[str, Any]]:
    audited = AuditResult.objects.filter(run=run, trace=OuterRef("pk"))
    aggregates: dict[str, Any] = {"traces": Count("id")}
    for name, column in FIGURES.items():
        aggregates[f"{name}__known"] = Count(column)
        aggregates[f"{name}__total"] = Sum(column)
    grouped = (
        Trace.objects.filter(project_id=run.project_id)
        .filter(Exists(audited))
        .values("model")
        .annotate(**aggregates)
        .order_by("model")
    )
    out = []
    for row in grouped:
        entry: dict[str, Any] = {"model": row["model"] or NO_MODEL, "traces": row["traces"]}
        for name in FIGURES:
            known, total = row[f"{name}__known"], row[f"{name}__total"]
            entry[name] = {
                "total": total if known else None,
                "mean": total / known if known else None,
                "known": known,
                "missing": row["traces"] - known,
            }
        out.append(entry)
    return out


def usage_display(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run page's rows: per figure its total and mean as text, or "—" and how many of the
    model's traces lack it."""
    texts = {"duration_ms": duration_text, "total_tokens": tokens_text, "cost_usd": cost_text}
    out = []
    for row in rows:
        cells = []
        for name, text in texts.items():
            f = row[name]
            cells.append(
                {
                    "name": name,
                    "total": text(f["total"]) if f["known"] else NONE,
                    "mean": text(f["mean"]) if f["known"] else NONE,
                    "missing": f["missing"],
                }
            )
        out.append({"model": row["model"], "traces": row["traces"], "cells": cells})
    return out
