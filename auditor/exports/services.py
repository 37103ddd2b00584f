"""Exports: create one (validated filters, resolved runs), build its snapshot once (claim,
write to a temporary file, store, record the manifest — all or nothing), and resume builds a
killed worker or a broker outage left behind. What a snapshot holds is read by `snapshot`, the
file written by one of `writers`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from auditor.exports.models import Export
from auditor.exports.snapshot import Snapshot
from auditor.exports.writers import WRITERS
from auditor.runs.models import AuditResult, AuditRun
from common.jobs import job_claim, job_enqueue, stale, stale_cutoff
from common.retrying import TRANSIENT
from policies import POLICIES
from traces.models import Project

log = logging.getLogger(__name__)

FORMATS = tuple(Export.Format.values)
TRANSITIONS = tuple(AuditResult.Transition.values)
LIST_FILTERS = ("policy", "transition", "model", "benchmark", "category")
EXPORT_QUEUE = "export"


class ExportRejected(Exception):
    """The export cannot be created as asked (unknown format, run or filter value)."""


def chunk_size_default() -> int:
    return int(getattr(settings, "TA_EXPORT_CHUNK_ROWS", 500))


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
    format: str,  # noqa: A002 — the SPEC's word for it
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
    # In the function: auditor.exports.tasks imports this module (its task calls export_build).
    from auditor.exports.tasks import build_export

    job_enqueue(build_export, export_id, queue=EXPORT_QUEUE)


def exports_resume_stale(*, older_than: float | None = None) -> list[int]:
    """Queue again exports left pending (broker was down) or running by a killed worker. A
    build is all-or-nothing (temporary file, stored only at the end), so redoing it is safe."""
    ids = list(stale(Export, stale_cutoff(older_than)).values_list("pk", flat=True)[:1000])
    for pk in ids:
        _enqueue(pk)
    return ids


# --- building --------------------------------------------------------------------------------


def _claim(export_id: int) -> Export | None:
    """Claim the build with a conditional update: a pending export, or a running one whose
    worker went silent. A done export is never claimed again — a snapshot is built once."""
    if not job_claim(Export, export_id, take_over_stale=True, attempts=F("attempts") + 1, error=""):
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
            snapshot = Snapshot(export, chunk_size or chunk_size_default(), mine)
            counts = WRITERS[export.format](snapshot, path)
            digest, size = _sha256(path)
            name = export.file.field.generate_filename(export, export.filename)
            with open(path, "rb") as fh:
                stored = default_storage.save(name, File(fh, name=export.filename))
        manifest = snapshot.manifest(counts=counts, digest=digest, size=size, name=stored)
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
    except TRANSIENT:
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
