"""The shape of exported rows: the decision columns (one list, read by the CSV and Parquet
writers and the manifest), a trace's header line, and a decision as a JSONL entry or a flat row.

Every format carries the trace's totals (`TOTALS`: start, duration, tokens, cost, as ingest
stored them from the events' optional fields, traces.totals): null where the trace has no such
figure, never 0, as on the traces list.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from common.hygiene import csv_safe
from traces.totals import COLUMNS as TOTALS

# One row per decision (run × trace × policy), in this order, in CSV and Parquet.
DECISION_COLUMNS = (
    "run",
    "trace_id",
    "trace_pk",
    "policy",
    "applied",
    "actor_success",
    "guarded_success",
    "transition",
    "continuation",
    "machine_transition",
    "agent",
    "model",
    "benchmark",
    "category",
    "task_id",
    *TOTALS,
    "tags",
    "comments",
    "annotations",
    "record",
)
# Columns that hold JSON text (named in the manifest and the Parquet metadata).
JSON_COLUMNS = ("tags", "comments", "annotations", "record")
# Trace fields read with each decision and each JSONL line.
TRACE_FIELDS = ("external_id", "agent", "model", "benchmark", "category", "task_id", *TOTALS)


def trace_header(t: dict) -> dict:
    return {
        "trace_id": t["external_id"],
        "pk": t["id"],
        "agent": t["agent"],
        "model": t["model"],
        "benchmark": t["benchmark"],
        "category": t["category"],
        "task_id": t["task_id"],
        # The run the trace came from; the model and agent columns above name it too.
        "run_label": t.get("run_label", ""),
        # The outcome the uploaded file recorded, said so: the audited actor outcome is each
        # decision's `actor_success` (one meaning per word, as on the trace page and the list).
        "outcome": {
            "success": t["outcome_success"],
            "reward": t["outcome_reward"],
            "source": "recorded",
        },
        "event_count": t["event_count"],
        # null where the trace has no such figure; the start as ISO 8601 text
        **{k: t[k] for k in TOTALS},
        "started_at": t["started_at"].isoformat() if t["started_at"] else None,
    }


def decision_entry(r: dict, notes: dict | None) -> dict:
    notes = notes or {}
    return {
        "run": r["run_id"],
        "policy": r["policy"],
        "applied": r["applied"],
        "transition": r["transition"],
        "actor_success": r["actor_success"],
        "guarded_success": r["guarded_success"],
        "continuation": r["continuation"],
        "override": notes.get("override"),
        "record": r["record"],
        "annotations": notes.get("items", []),
    }


def flat_decision(
    r: dict,
    notes: dict | None,
    *,
    tags: list[str] | None = None,
    comments: list[dict] | None = None,
) -> dict:
    """One decision as a flat row; `tags` and `comments` are its trace's (trace_notes)."""
    notes = notes or {}
    items = notes.get("items", [])
    override = notes.get("override")
    return {
        "run": r["run_id"],
        "trace_id": r["trace__external_id"],
        "trace_pk": r["trace_id"],
        "policy": r["policy"],
        "applied": r["applied"],
        "actor_success": r["actor_success"],
        "guarded_success": r["guarded_success"],
        "transition": r["transition"],
        "continuation": r["continuation"],
        "machine_transition": override["machine_transition"] if override else None,
        "agent": r["trace__agent"],
        "model": r["trace__model"],
        "benchmark": r["trace__benchmark"],
        "category": r["trace__category"],
        "task_id": r["trace__task_id"],
        # started_at stays a datetime: Parquet types it, CSV writes it as ISO 8601 (csv_cell)
        **{k: r[f"trace__{k}"] for k in TOTALS},
        "tags": orjson.dumps(tags or []).decode(),
        "comments": orjson.dumps(comments or []).decode(),
        "annotations": orjson.dumps(items).decode(),
        "record": orjson.dumps(r["record"]).decode(),
        "_record": r["record"],
        "_n_annotations": len(items),
    }


def scalar(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return orjson.dumps(value).decode()


def csv_cell(value: Any) -> Any:
    """CSV has no types: booleans are written `true`/`false`, times as ISO 8601 and null as an
    empty cell. Strings are agent-controlled: one that a spreadsheet would run as a formula is
    neutralised."""
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, datetime):
        return value.isoformat()
    return csv_safe(value)
