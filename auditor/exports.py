"""Dataset exports (issue 7, SPEC §6 "Export", §9): create an export, build its immutable
snapshot in bounded memory, and read exports back scoped to what the caller may see.

Formats (docs/exports.md has the full layout):
- `jsonl`: one line per trace — `{"trace": header, "events": [v1 events as uploaded],
  "decisions": [...], "annotations": [...]}`. The events re-ingest as they are.
- `csv`: one row per decision (run × trace × policy), key record fields flattened.
- `parquet`: one row per decision, the record as a JSON string column, one row group per chunk.

Memory stays bounded whatever the dataset's size: traces and decisions are read with keyset
pagination (`id > last ORDER BY id LIMIT chunk`), each chunk is written out (a Parquet row group,
or lines) before the next is read, and the file goes to storage from a temporary file. Nothing
holds the whole dataset.
"""

from __future__ import annotations

import csv
import hashlib
import logging
import os
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from typing import IO, Any

import orjson
from django.apps import apps
from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Count, F, Max, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from auditor.models import AuditResult, AuditRun, Export
from policies import POLICIES
from traces import selectors as trace_selectors
from traces.models import Project
from traces.selectors import load_events

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
FORMATS = tuple(Export.Format.values)
TRANSITIONS = tuple(AuditResult.Transition.values)
LIST_FILTERS = ("policy", "transition", "model", "benchmark", "category")
# A chunk of traces is also cut when its events pass this many, so one chunk of very long
# traces cannot hold much more than an ordinary one.
CHUNK_EVENTS = 50_000
MAX_FLAT_COLUMNS = 64
CONTENT_TYPES = {
    "jsonl": "application/x-ndjson",
    "csv": "text/csv; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}
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
    "annotations",
    "record",
)
_TRACE_FIELDS = ("external_id", "agent", "model", "benchmark", "category", "task_id")
_TRANSIENT = (OperationalError, InterfaceError)
EXPORT_QUEUE = "export"


class ExportRejected(Exception):
    """The export cannot be created as asked (unknown format, run or filter value)."""


def chunk_size_default() -> int:
    return int(getattr(settings, "TA_EXPORT_CHUNK_ROWS", 500))


# --- reading ---------------------------------------------------------------------------------


def export_list(*, user, project: Project | None = None) -> QuerySet[Export]:  # type: ignore[no-untyped-def]
    qs = Export.objects.filter(project__in=trace_selectors.project_list(user=user))
    if project is not None:
        qs = qs.filter(project=project)
    return qs.select_related("project", "created_by")


def export_get(*, user, export_id: int) -> Export:  # type: ignore[no-untyped-def]
    """The export, or 404 — also for an export of a project the caller is not a member of."""
    export = export_list(user=user).filter(pk=export_id).first()
    if export is None:
        raise Http404("no such export")
    return export


def export_open(export: Export) -> IO[bytes]:
    """The snapshot's file, opened for streaming. Only a done export has one."""
    if export.status != Export.Status.DONE or not export.file.name:
        raise ExportRejected(f"export #{export.pk} is {export.status}, not built yet")
    return default_storage.open(export.file.name, "rb")


# --- creating --------------------------------------------------------------------------------


def _as_list(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, str | int):
        value = [value]
    if not isinstance(value, list | tuple):
        raise ExportRejected(f"expected a value or a list of values, not {type(value).__name__}")
    out = [str(v).strip()[:300] for v in value if str(v).strip()]
    if any("\x00" in v for v in out):
        raise ExportRejected("filter values cannot contain NUL characters")
    return out


def export_filters_clean(*, project: Project, filters: Mapping[str, Any] | None) -> dict:
    """Validated, normalised filters. `runs` is resolved here (default: every finished run of
    the project), so the snapshot's content is fixed by what was asked at creation."""
    filters = dict(filters or {})
    unknown = sorted(set(filters) - {"runs", "run", *LIST_FILTERS})
    if unknown:
        raise ExportRejected(f"unknown filters {unknown}; use runs, {', '.join(LIST_FILTERS)}")
    raw_runs = _as_list(filters.get("runs")) + _as_list(filters.get("run"))
    try:
        run_ids = sorted({int(r) for r in raw_runs})
    except ValueError as exc:
        raise ExportRejected(f"runs must be run ids (numbers): {raw_runs}") from exc
    if any(not 0 < r < 2**63 for r in run_ids):
        raise ExportRejected(f"no audit runs {[r for r in run_ids if not 0 < r < 2**63]}")
    runs = AuditRun.objects.filter(project=project)
    if run_ids:
        found = dict(runs.filter(pk__in=run_ids).values_list("pk", "status"))
        missing = [r for r in run_ids if r not in found]
        if missing:
            raise ExportRejected(f"no audit runs {missing} in project {project.name}")
        unfinished = [r for r in run_ids if found[r] != AuditRun.Status.DONE]
        if unfinished:
            raise ExportRejected(f"audit runs {unfinished} are not done; export finished runs")
    else:
        run_ids = list(
            runs.filter(status=AuditRun.Status.DONE).order_by("pk").values_list("pk", flat=True)
        )
    out: dict[str, Any] = {"runs": run_ids}
    for key in LIST_FILTERS:
        values = sorted(set(_as_list(filters.get(key))))
        if key == "policy" and (bad := [v for v in values if v not in POLICIES]):
            raise ExportRejected(f"unknown policies {bad}; choose from {', '.join(POLICIES)}")
        if key == "transition" and (bad := [v for v in values if v not in TRANSITIONS]):
            raise ExportRejected(f"unknown transitions {bad}; choose from {', '.join(TRANSITIONS)}")
        if values:
            out[key] = values
    return out


def export_create(
    *,
    project: Project,
    format: str,  # noqa: A002 — the issue's word for it
    filters: Mapping[str, Any] | None = None,
    user=None,  # type: ignore[no-untyped-def]
    enqueue: bool = True,
) -> Export:
    """Record the export and queue its build (after commit, so the worker sees the row)."""
    if format not in FORMATS:
        raise ExportRejected(f"unknown format {format!r}; choose one of: {', '.join(FORMATS)}")
    export = Export.objects.create(
        project=project,
        format=format,
        filters=export_filters_clean(project=project, filters=filters),
        created_by=user if getattr(user, "pk", None) is not None else None,
    )
    if enqueue:
        transaction.on_commit(lambda: _enqueue(export.pk))
    return export


def _enqueue(export_id: int) -> None:
    from auditor.tasks_export import build_export

    try:
        build_export.apply_async(args=[export_id], queue=EXPORT_QUEUE)
    except Exception:  # noqa: BLE001 — an unreachable broker; exports_resume_stale queues it
        log.warning("broker unavailable: export %s stays pending", export_id, exc_info=True)


def exports_resume_stale(*, older_than: float | None = None) -> list[int]:
    """Queue again exports left pending (broker was down) or running by a killed worker. A
    build is all-or-nothing (temporary file, stored only at the end), so redoing it is safe."""
    age = older_than if older_than is not None else float(settings.TA_STALE_SECONDS)
    cutoff = timezone.now() - timedelta(seconds=age)
    ids = list(
        Export.objects.filter(
            Q(status=Export.Status.PENDING, created_at__lt=cutoff)
            | Q(status=Export.Status.RUNNING, heartbeat_at__lt=cutoff)
        ).values_list("pk", flat=True)[:1000]
    )
    for pk in ids:
        _enqueue(pk)
    return ids


# --- building --------------------------------------------------------------------------------


class _ProjectScope:
    """The identity a build reads as: the export's project and nothing else (the same scoping
    as a project token), so every query goes through the traces selectors."""

    is_authenticated = True

    def __init__(self, project: Project) -> None:
        self.project = project


def _claim(export_id: int) -> Export | None:
    """Claim the build with a conditional update: a pending export, or a running one whose
    worker went silent. A done export is never claimed again — a snapshot is built once."""
    now = timezone.now()
    stale = now - timedelta(seconds=float(settings.TA_STALE_SECONDS))
    claimed = Export.objects.filter(
        Q(status=Export.Status.PENDING) | Q(status=Export.Status.RUNNING, heartbeat_at__lt=stale),
        pk=export_id,
    ).update(
        status=Export.Status.RUNNING,
        attempts=F("attempts") + 1,
        started_at=now,
        heartbeat_at=now,
        error="",
    )
    if not claimed:
        return None
    return Export.objects.select_related("project").get(pk=export_id)


def export_build(*, export_id: int, chunk_size: int | None = None) -> Export | None:
    """Build the snapshot. Returns None when there is nothing to do (already built, failed, or
    being built by a live worker). A permanent error marks the export failed, with the reason;
    a transient database error puts it back to pending and is raised for the task to retry."""
    export = _claim(export_id)
    if export is None:
        return None
    attempt = export.attempts
    mine = Export.objects.filter(pk=export_id, status=Export.Status.RUNNING, attempts=attempt)
    stored: str | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="ta-export-") as tmp:
            path = os.path.join(tmp, "data")
            builder = _Builder(export, chunk_size or chunk_size_default(), mine)
            counts = builder.write(path)
            digest, size = _sha256(path)
            name = export.file.field.generate_filename(export, export.filename)
            with open(path, "rb") as fh:
                stored = default_storage.save(name, File(fh, name=export.filename))
        manifest = builder.manifest(counts=counts, digest=digest, size=size, name=stored)
        done = mine.update(
            status=Export.Status.DONE,
            file=stored,
            manifest=manifest,
            rows=counts["rows"],
            bytes=size,
            finished_at=timezone.now(),
        )
        if not done:  # a newer claim took over while this one was slow; keep only one file
            default_storage.delete(stored)
            return None
    except _TRANSIENT:
        if stored:
            default_storage.delete(stored)
        mine.update(status=Export.Status.PENDING)
        raise
    except Exception as exc:  # noqa: BLE001 — a failed build is a visible state, not a hole
        log.exception("export %s failed", export_id)
        if stored:
            default_storage.delete(stored)
        mine.update(
            status=Export.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:4000],
            finished_at=timezone.now(),
        )
    return Export.objects.select_related("project").get(pk=export_id)


def _sha256(path: str) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 16):  # small blocks: they count in the peak
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def _keyset(qs: QuerySet, fields: Sequence[str], size: int) -> Iterator[list]:
    """Pages of `qs.values(*fields)` by ascending id, `size` at a time; memory is one page."""
    last = 0
    while True:
        page = list(qs.filter(pk__gt=last).order_by("pk").values(*fields)[:size])
        if not page:
            return
        yield page
        last = page[-1]["id"]


class _Builder:
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
        # The snapshot's bounds: what existed when the build started. Uploads or results that
        # land while it runs cannot make it half-include something.
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
        self.columns: list[str] = []
        self.annotation_models = annotation_models()

    # -- shared pieces ---------------------------------------------------------------------
    def _heartbeat(self) -> None:
        self.mine.update(heartbeat_at=timezone.now())

    def _decision_pages(self) -> Iterator[list[dict]]:
        fields = (
            "id",
            "run_id",
            "trace_id",
            "policy",
            "applied",
            "actor_success",
            "guarded_success",
            "transition",
            "continuation",
            "record",
            *(f"trace__{k}" for k in _TRACE_FIELDS),
        )
        yield from _keyset(self.decisions, fields, self.chunk)

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
                "judge": run.judge,
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
            "annotations_included": self.annotation_models is not None,
            "json_columns": ["annotations", "record"] if e.format != "jsonl" else [],
            "chunk_rows": self.chunk,
            "as_of": {"max_trace_id": self.max_trace, "max_result_id": self.max_result},
            "runs": runs,
        }

    def write(self, path: str) -> dict:
        return {"jsonl": self._jsonl, "csv": self._csv, "parquet": self._parquet}[
            self.export.format
        ](path)

    # -- jsonl: one line per trace ---------------------------------------------------------
    def _trace_chunks(self) -> Iterator[list[dict]]:
        """Pages of traces, cut further so a page's events stay under CHUNK_EVENTS."""
        fields = ("id", *_TRACE_FIELDS, "outcome_success", "outcome_reward", "event_count")
        for page in _keyset(self.traces, fields, self.chunk):
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

    def _jsonl(self, path: str) -> dict:
        self.columns = ["trace", "events", "decisions", "annotations"]
        n_traces = n_events = n_decisions = n_annotations = 0
        with open(path, "wb") as out:
            for part in self._trace_chunks():
                ids = [t["id"] for t in part]
                events = load_events(ids)
                decisions: dict[int, list[dict]] = defaultdict(list)
                rows = list(
                    self.decisions.filter(trace_id__in=ids)
                    .order_by("trace_id", "run_id", "policy")
                    .values(
                        "id",
                        "trace_id",
                        "run_id",
                        "policy",
                        "applied",
                        "actor_success",
                        "guarded_success",
                        "transition",
                        "continuation",
                        "record",
                    )
                )
                notes = annotations_for([r["id"] for r in rows], self.annotation_models)
                for r in rows:
                    decisions[r["trace_id"]].append(_decision(r, notes.get(r["id"])))
                for t in part:
                    ds = decisions.get(t["id"], [])
                    anns = [
                        {"run": d["run"], "policy": d["policy"], **a}
                        for d in ds
                        for a in d.pop("annotations")
                    ]
                    line = {
                        "trace": _trace_header(t),
                        "events": events[t["id"]],
                        "decisions": ds,
                        "annotations": anns,
                    }
                    out.write(orjson.dumps(line) + b"\n")
                    n_traces += 1
                    n_events += len(events[t["id"]])
                    n_decisions += len(ds)
                    n_annotations += len(anns)
                del events, decisions, rows, notes
                self._heartbeat()
        return {
            "rows": n_traces,
            "traces": n_traces,
            "events": n_events,
            "decisions": n_decisions,
            "annotations": n_annotations,
        }

    # -- rows: one per decision ------------------------------------------------------------
    def _rows(self) -> Iterator[list[dict]]:
        """Decision rows, a chunk at a time, with annotations attached."""
        for page in self._decision_pages():
            notes = annotations_for([r["id"] for r in page], self.annotation_models)
            yield [_flat_decision(r, notes.get(r["id"])) for r in page]
            self._heartbeat()

    def _tail_counts(self, rows: int, annotations: int) -> dict:
        return {
            "rows": rows,
            "decisions": rows,
            "traces": self.decisions.values("trace_id").distinct().count(),
            "annotations": annotations,
        }

    def _record_keys(self) -> list[str]:
        """Top-level record fields to flatten into CSV columns: a first pass over the records
        (bounded: one page at a time, at most MAX_FLAT_COLUMNS names kept)."""
        keys: set[str] = set()
        for page in _keyset(self.decisions, ("id", "record"), self.chunk):
            for r in page:
                if isinstance(r["record"], dict):
                    keys.update(k for k in r["record"] if len(keys) < MAX_FLAT_COLUMNS)
        return sorted(keys)

    def _csv(self, path: str) -> dict:
        flat = self._record_keys()
        self.columns = [*DECISION_COLUMNS, *(f"record.{k}" for k in flat)]
        n = n_ann = 0
        with open(path, "w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(self.columns)
            for rows in self._rows():
                for row in rows:
                    record = row["_record"]
                    cells = [_csv_cell(row[c]) for c in DECISION_COLUMNS]
                    cells += [
                        _csv_cell(_scalar(record.get(k))) if isinstance(record, dict) else ""
                        for k in flat
                    ]
                    writer.writerow(cells)
                    n_ann += row["_n_annotations"]
                n += len(rows)
        return self._tail_counts(n, n_ann)

    def _parquet(self, path: str) -> dict:
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = parquet_schema()
        self.columns = list(schema.names)
        n = n_ann = 0
        with pq.ParquetWriter(path, schema, compression="zstd") as writer:
            for rows in self._rows():
                table = pa.Table.from_pylist(
                    [{c: r[c] for c in self.columns} for r in rows], schema=schema
                )
                writer.write_table(table, row_group_size=max(1, len(rows)))
                n += len(rows)
                n_ann += sum(r["_n_annotations"] for r in rows)
                del table
        return self._tail_counts(n, n_ann)


def parquet_schema():  # type: ignore[no-untyped-def]
    import pyarrow as pa

    string_cols = {
        "trace_id",
        "policy",
        "transition",
        "continuation",
        "machine_transition",
        "agent",
        "model",
        "benchmark",
        "category",
        "task_id",
        "annotations",
        "record",
    }
    types = {"run": pa.int64(), "trace_pk": pa.int64()}
    for c in ("applied", "actor_success", "guarded_success"):
        types[c] = pa.bool_()
    fields = [pa.field(c, pa.string() if c in string_cols else types[c]) for c in DECISION_COLUMNS]
    return pa.schema(
        fields,
        metadata={
            "trace_auditor.schema_version": str(SCHEMA_VERSION),
            "trace_auditor.json_columns": "annotations,record",
        },
    )


# --- rows and lines --------------------------------------------------------------------------


def _trace_header(t: dict) -> dict:
    return {
        "trace_id": t["external_id"],
        "pk": t["id"],
        "agent": t["agent"],
        "model": t["model"],
        "benchmark": t["benchmark"],
        "category": t["category"],
        "task_id": t["task_id"],
        "outcome": {"success": t["outcome_success"], "reward": t["outcome_reward"]},
        "event_count": t["event_count"],
    }


def _decision(r: dict, notes: dict | None) -> dict:
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


def _flat_decision(r: dict, notes: dict | None) -> dict:
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
        "annotations": orjson.dumps(items).decode(),
        "record": orjson.dumps(r["record"]).decode(),
        "_record": r["record"],
        "_n_annotations": len(items),
    }


def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return orjson.dumps(value).decode()


def _csv_cell(value: Any) -> Any:
    """CSV has no types: booleans are written `true`/`false` and null as an empty cell."""
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return value


# --- annotations -----------------------------------------------------------------------------


def annotation_models():  # type: ignore[no-untyped-def]
    """(AnnotationItem, ResultOverride), or None when this install has no annotation tables."""
    try:
        item = apps.get_model("auditor", "AnnotationItem")
        override = apps.get_model("auditor", "ResultOverride")
    except LookupError:
        return None
    # The models can exist before their migration has run (a partial deploy); then there is
    # nothing to export, rather than a failed build.
    if item._meta.db_table not in connection.introspection.table_names():
        return None
    return item, override


def annotations_for(result_ids: Sequence[int], models=None) -> dict[int, dict]:  # type: ignore[no-untyped-def]
    """Per audit result: its annotation items with their verdicts, and the human override of
    its outcome, if any. Annotators appear by user id (pseudonymous), not by name.

    Built on auditor.models_annotation (AnnotationItem, Verdict, ResultOverride); an install
    without those models exports no annotations."""
    if not result_ids:
        return {}
    if models is None:
        return {}
    Item, Override = models  # noqa: N806 — model classes
    out: dict[int, dict] = {}
    items = (
        Item.objects.filter(result_id__in=result_ids)
        .prefetch_related("verdicts")
        .order_by("result_id", "id")
    )
    for item in items:
        out.setdefault(item.result_id, {"items": []})["items"].append(
            {
                "item": item.pk,
                "queue": item.queue_id,
                "kind": item.kind,
                "ref": item.ref,
                "status": item.status,
                "final_label": item.final_label or None,
                "final_source": item.final_source or None,
                "verdicts": [
                    {
                        "annotator": v.annotator_id,
                        "label": v.label,
                        "fatal": v.fatal,
                        "skipped": v.skipped,
                        "comment": v.comment,
                        "display_order": v.display_order,
                        "seconds": v.seconds,
                        "created_at": v.created_at.isoformat(),
                    }
                    for v in item.verdicts.all()
                ],
            }
        )
    for o in Override.objects.filter(result_id__in=result_ids):
        out.setdefault(o.result_id, {"items": []})["override"] = {
            "machine_guarded_success": o.machine_guarded_success,
            "machine_transition": o.machine_transition,
            "human_guarded_success": o.human_guarded_success,
            "source": o.source,
        }
    return out


def manifest_text(export: Export) -> str:
    return orjson.dumps(export.manifest, option=orjson.OPT_INDENT_2).decode()


__all__ = [
    "FORMATS",
    "SCHEMA_VERSION",
    "ExportRejected",
    "export_build",
    "export_create",
    "export_filters_clean",
    "export_get",
    "export_list",
    "export_open",
    "exports_resume_stale",
    "manifest_text",
    "parquet_schema",
]
