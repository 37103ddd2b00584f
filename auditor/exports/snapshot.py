"""What one export's snapshot holds, read in bounded memory.

The snapshot is fixed when the build starts: the traces matching the export's filters and the
decisions of its runs, bounded by the largest ids that existed then, so uploads or results that
land while it builds cannot make it half-include something. Traces and decisions are read with
keyset pagination (`id > last ORDER BY id LIMIT chunk`); a writer writes each page before the
next is read, so nothing holds the whole dataset.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence

from django.db.models import Count, Max, QuerySet
from django.utils import timezone

from auditor.annotation.selectors import result_annotations
from auditor.exports.models import Export
from auditor.exports.rows import JSON_COLUMNS, TRACE_FIELDS, flat_decision
from auditor.runs.models import DECISION_FIELDS, AuditResult, AuditRun
from auditor.runs.stats_display import model_statistics, policy_statistics
from auditor.trace_notes import selectors as note_selectors
from common.jobs import job_heartbeat
from traces import selectors as trace_selectors

SCHEMA_VERSION = 1
# A chunk of traces is also cut when its events pass this many, so one chunk of very long
# traces cannot hold much more than an ordinary one.
CHUNK_EVENTS = 50_000
# What every writer reads of a decision (values()); rows add the trace's fields.
RESULT_VALUES = ("id", "run_id", "trace_id", "policy", *DECISION_FIELDS)


class _ProjectScope:
    """The identity a build reads as: the export's project and nothing else (the same scoping
    as a project token), so every query goes through the traces selectors."""

    is_authenticated = True

    def __init__(self, project) -> None:  # type: ignore[no-untyped-def]
        self.project = project


def keyset(qs: QuerySet, fields: Sequence[str], size: int) -> Iterator[list]:
    """Pages of `qs.values(*fields)` by ascending id, `size` at a time; memory is one page."""
    last = 0
    while True:
        page = list(qs.filter(pk__gt=last).order_by("pk").values(*fields)[:size])
        if not page:
            return
        yield page
        last = page[-1]["id"]


class Snapshot:
    """The traces and decisions of one export, and the manifest describing them. `mine` is the
    export's row as claimed by this build: heartbeats go through it."""

    def __init__(self, export: Export, chunk: int, mine: QuerySet[Export]) -> None:
        self.export = export
        self.chunk = max(1, chunk)
        self.mine = mine
        f = export.filters
        self.run_ids = list(f.get("runs") or [])
        scope = _ProjectScope(export.project)
        traces = trace_selectors.trace_list(user=scope, project=export.project)
        for key in ("model", "benchmark", "category"):
            if f.get(key):
                traces = traces.filter(**{f"{key}__in": f[key]})
        self.max_trace = traces.aggregate(m=Max("pk"))["m"] or 0
        traces = traces.filter(pk__lte=self.max_trace)
        decisions = AuditResult.objects.filter(run_id__in=self.run_ids, trace__in=traces)
        if f.get("policy"):
            decisions = decisions.filter(policy__in=f["policy"])
        if f.get("transition"):
            decisions = decisions.filter(transition__in=f["transition"])
            # Asking for a transition asks for the traces that have one.
            traces = traces.filter(pk__in=decisions.values("trace_id"))
        self.max_result = decisions.aggregate(m=Max("pk"))["m"] or 0
        self.decisions = decisions.filter(pk__lte=self.max_result)
        self.traces = traces
        self.columns: list[str] = []  # set by the writer

    def heartbeat(self) -> None:
        job_heartbeat(self.mine)

    # -- traces (JSONL) --------------------------------------------------------------------
    def trace_chunks(self) -> Iterator[list[dict]]:
        """Pages of traces, cut further so a page's events stay under CHUNK_EVENTS."""
        fields = (
            "id",
            *TRACE_FIELDS,
            "run_label",
            "outcome_success",
            "outcome_reward",
            "event_count",
        )
        for page in keyset(self.traces, fields, self.chunk):
            part: list[dict] = []
            events = 0
            for t in page:
                if part and events + t["event_count"] > CHUNK_EVENTS:
                    yield part
                    part, events = [], 0
                part.append(t)
                events += t["event_count"]
            if part:
                yield part

    def decisions_of(self, trace_ids: Sequence[int]) -> list[dict]:
        return list(
            self.decisions.filter(trace_id__in=trace_ids)
            .order_by("trace_id", "run_id", "policy")
            .values(*RESULT_VALUES)
        )

    # -- decisions (CSV, Parquet): one row each --------------------------------------------
    def rows(self) -> Iterator[list[dict]]:
        """Flat decision rows, a chunk at a time, with annotations attached."""
        fields = (*RESULT_VALUES, *(f"trace__{k}" for k in TRACE_FIELDS))
        for page in keyset(self.decisions, fields, self.chunk):
            notes = result_annotations([r["id"] for r in page])
            trace_ids = sorted({r["trace_id"] for r in page})
            tags = note_selectors.tags_of(trace_ids)
            comments = note_selectors.comments_by_trace(trace_ids)
            yield [
                flat_decision(
                    r,
                    notes.get(r["id"]),
                    tags=tags.get(r["trace_id"]),
                    comments=comments.get(r["trace_id"]),
                )
                for r in page
            ]
            self.heartbeat()

    def record_keys(self, limit: int) -> list[str]:
        """Top-level record fields (at most `limit` names), from a first pass over the records
        (bounded: one page at a time)."""
        keys: set[str] = set()
        for page in keyset(self.decisions, ("id", "record"), self.chunk):
            for r in page:
                if isinstance(r["record"], dict):
                    keys.update(k for k in r["record"] if len(keys) < limit)
        return sorted(keys)

    def row_counts(self, rows: int, annotations: int) -> dict:
        return {
            "rows": rows,
            "decisions": rows,
            "traces": self.decisions.values("trace_id").distinct().count(),
            "annotations": annotations,
        }

    # -- the manifest ------------------------------------------------------------------------
    def manifest(self, *, counts: dict, digest: str, size: int, name: str) -> dict:
        e = self.export
        transitions: dict[str, dict[str, int]] = defaultdict(dict)
        for row in self.decisions.values("policy", "transition").annotate(n=Count("pk")):
            transitions[row["policy"]][row["transition"]] = row["n"]
        runs = {}
        for run in AuditRun.objects.filter(pk__in=self.run_ids).order_by("pk"):
            runs[str(run.pk)] = {
                "label": run.label,
                "policies": run.policies,
                "settings": run.settings,
                "effective_settings": {
                    p: ((run.summary or {}).get(p) or {}).get("settings") for p in run.policies
                },
                # the run's Δ per policy as every page shows it (n_unknown, bounds, known n)
                "statistics": {
                    p: policy_statistics((run.summary or {}).get(p)) for p in run.policies
                },
                # the same per model and the difference of Δ between each two models
                "per_model": {
                    p: model_statistics((run.summary or {}).get(p)) for p in run.policies
                },
                "judge": run.judge,
                # the key's variable name at most, never a key (auditor/llm/settings.py)
                "model_settings": run.model_settings,
                "environment": run.environment,
                "trace_filter": run.trace_filter,
                "traces_total": run.traces_total,
                "created_at": run.created_at.isoformat(),
                "finished_at": run.finished_at.isoformat() if run.finished_at else None,
            }
        return {
            "schema_version": SCHEMA_VERSION,
            "export": e.pk,
            "project": {"id": e.project.pk, "name": e.project.name},
            "format": e.format,
            "filters": e.filters,
            "created_at": e.created_at.isoformat(),
            "built_at": timezone.now().isoformat(),
            "counts": {**counts, "transitions": dict(transitions)},
            "content_hash": digest,
            "hash_algorithm": "sha256",
            "bytes": size,
            "file": name,
            "columns": self.columns,
            "annotations_included": True,
            "json_columns": list(JSON_COLUMNS) if e.format != "jsonl" else [],
            "chunk_rows": self.chunk,
            "as_of": {"max_trace_id": self.max_trace, "max_result_id": self.max_result},
            "runs": runs,
        }
