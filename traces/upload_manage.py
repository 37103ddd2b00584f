"""Changing an upload after it is stored: rename its run, process it again with another format,
or delete it with its traces. One service behind the upload page, the REST API and
`manage.py upload`; who may call it (owners only) is the caller's check.

Renaming keeps the traces (and what refers to them: audit results, annotations) and rewrites
their ids and run columns in place; the events keep the ids they were stored with (they are
append-only), and everything that names a trace reads the trace's own id. Processing again
deletes the traces and stores them anew, as a first upload would.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models, transaction
from django.db.models.deletion import CASCADE

from traces.models import Trace, Upload
from traces.run_source import (
    RunSource,
    default_key,
    own_key,
    requalify,
    request_key,
    run_read,
    unapply,
)
from traces.services import (
    FORMATS,
    UploadRejected,
    _enqueue,
    run_source_check,
    upload_same_request,
)
from traces.store import existing_trace_ids, trace_fields

# Formats whose trace ids are the file's own (never qualified by the run).
NATIVE_ID_FORMATS = ("v1", "ta_export")
_BATCH = 1000


def _require_finished(upload: Upload, doing: str) -> None:
    if not upload.is_finished:
        raise UploadRejected(
            f"upload #{upload.pk} is {upload.status}; {doing} once it has finished", status=409
        )


def _require_free(upload: Upload, fmt: str, run: RunSource) -> None:
    other = upload_same_request(upload.project, upload.content_hash, fmt, run, exclude=upload.pk)
    if other is not None:
        raise UploadRejected(
            f"upload #{other.pk} already holds this file with that format and run", status=409
        )


@dataclass(frozen=True, slots=True)
class _Stored:
    """What processing reads back of a stored upload, as a stand-in for `run_read`."""

    header: dict


def upload_rename(*, upload: Upload, run: RunSource) -> Upload:
    """Give the upload's run another model / agent / benchmark / label. Its traces follow:
    their ids, run columns and headers name the new run; annotations and results stay. Refused
    (UploadRejected, 409) when another trace of the project already has one of the new ids."""
    run = run_source_check(run)
    _require_finished(upload, "rename it")
    _require_free(upload, upload.format_requested, run)
    old = RunSource.of(upload)
    native = upload.format_detected in NATIVE_ID_FORMATS
    renamed = Upload(
        pk=upload.pk,
        project_id=upload.project_id,
        run_model=run.model,
        run_agent=run.agent,
        run_benchmark=run.benchmark,
        run_label=run.label,
    )
    traces = list(
        Trace.objects.filter(upload=upload).only("pk", "external_id", "header", "run_source")
    )
    # As when processing: a run part whose ids another upload holds gets the upload number.
    taken: frozenset[str] = frozenset()
    for _attempt in range(2):
        changes, headers = _renamed(upload, traces, old, run, renamed, native, taken)
        clash = {
            tid: other
            for tid, other in existing_trace_ids(
                upload.project_id, [t.external_id for t in changes]
            ).items()
            if other != upload.pk
        }
        clashed = frozenset(t.run_source for t in changes if t.external_id in clash) - {""}
        if not clash or not clashed - taken:
            break
        taken |= clashed
    if clash:
        tid, other = next(iter(clash.items()))
        raise UploadRejected(
            f"{len(clash)} trace id(s) of the renamed run are already stored by upload "
            f"#{other} (e.g. {tid}); choose another label",
            status=409,
        )
    fields = ["external_id", "run_source", "header", "model", "agent", "benchmark", "run_label"]
    with transaction.atomic():
        Trace.objects.bulk_update(changes, fields, batch_size=_BATCH)
        found = run_read(renamed, headers) if not native else {}
        values = {
            "run_model": run.model,
            "run_agent": run.agent,
            "run_benchmark": run.benchmark,
            "run_label": run.label,
            **found,
        }
        Upload.objects.filter(pk=upload.pk).update(
            run_stated=run.stated(),
            request_key=request_key(upload.format_requested, run),
            **values,
        )
    upload.refresh_from_db()
    return upload


def _renamed(
    upload: Upload,
    traces: list[Trace],
    old: RunSource,
    run: RunSource,
    renamed: Upload,
    native: bool,
    taken: frozenset[str],
) -> tuple[list[Trace], list[_Stored]]:
    """The traces with the new run's ids, columns and headers (unsaved copies)."""
    default = default_key(upload.origin_path or upload.filename, upload.pk)
    changes, headers = [], []
    for stored in traces:
        trace = Trace(pk=stored.pk, external_id=stored.external_id, run_source=stored.run_source)
        header = dict(stored.header or {})
        if not native:
            header = unapply(header, old)
            run.apply(header)
            key = run.key(header)
            key = own_key(key, upload.pk, taken) if key else default
            trace.external_id = requalify(stored.external_id, stored.run_source, key)
            trace.run_source = key
        trace.header = header
        for name, value in trace_fields(header, renamed).items():
            if name in ("model", "agent", "benchmark", "run_label"):
                setattr(trace, name, value)
        changes.append(trace)
        headers.append(_Stored(header))
    return changes, headers


def upload_reprocess(
    *, upload: Upload, fmt: str | None = None, run: RunSource | None = None, enqueue: bool = True
) -> Upload:
    """Process the stored file again, with another format (and run) when given: its traces, and
    the results and annotations on them, are deleted and the file is read anew. With
    `enqueue=False` the caller runs `upload_process` itself (the CLI's --inline)."""
    fmt = fmt or upload.format_requested
    if fmt not in FORMATS:
        raise UploadRejected(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    run = run_source_check(run if run is not None else RunSource.of(upload))
    _require_finished(upload, "process it again")
    _require_free(upload, fmt, run)
    with transaction.atomic():
        _delete_traces(upload)
        Upload.objects.filter(pk=upload.pk).update(
            status=Upload.Status.PENDING,
            format_requested=fmt,
            format_detected="",
            run_model=run.model,
            run_agent=run.agent,
            run_benchmark=run.benchmark,
            run_label=run.label,
            run_stated=run.stated(),
            request_key=request_key(fmt, run),
            progress=0.0,
            attempts=0,
            traces_accepted=0,
            traces_rejected=0,
            events=0,
            error_count=0,
            errors=[],
            warnings=[],
            failure="",
            report={},
            started_at=None,
            finished_at=None,
        )
        if enqueue:
            pk = upload.pk
            transaction.on_commit(lambda: _enqueue(pk))
    upload.refresh_from_db()
    return upload


def upload_dependents(upload: Upload) -> list[tuple[str, int]]:
    """What deleting the upload deletes, as (what, how many): its traces, their events, and
    whatever refers to them by a cascading key (audit results, annotations, …), found from the
    models so that apps built on traces are named without traces importing them."""
    traces = Trace.objects.filter(upload=upload)
    counts: dict[str, int] = {str(Trace._meta.verbose_name_plural): traces.count()}
    _count_cascade(Trace, traces, counts, depth=3)
    return [(name, n) for name, n in counts.items() if n]


def _count_cascade(
    model: type[models.Model], qs: models.QuerySet, counts: dict[str, int], depth: int
) -> None:
    if depth == 0:
        return
    for rel in model._meta.related_objects:
        if rel.on_delete is not CASCADE or rel.many_to_many:
            continue
        related = rel.related_model._default_manager.filter(
            **{f"{rel.field.name}__in": qs.values("pk")}
        )
        n = related.count()
        if n:
            name = str(rel.related_model._meta.verbose_name_plural)
            counts[name] = counts.get(name, 0) + n
            _count_cascade(rel.related_model, related, counts, depth - 1)


def upload_delete(*, upload: Upload) -> list[tuple[str, int]]:
    """Delete the upload, its traces and all that refers to them, and its raw file. Returns
    what went (as `upload_dependents` counts it)."""
    _require_finished(upload, "delete it")
    gone = upload_dependents(upload)
    with transaction.atomic():
        _delete_traces(upload)
        stored = upload.file.name
        storage = upload.file.storage
        Upload.objects.filter(pk=upload.pk).delete()
        transaction.on_commit(lambda: storage.delete(stored) if stored else None)
    return gone


def _delete_traces(upload: Upload) -> None:
    ids = list(Trace.objects.filter(upload=upload).values_list("pk", flat=True))
    for start in range(0, len(ids), _BATCH):
        Trace.objects.filter(pk__in=ids[start : start + _BATCH]).delete()
