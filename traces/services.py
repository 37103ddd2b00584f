"""Ingestion: the one service behind the upload page, the REST API and `manage.py ingest`.

`upload_create` stores the raw file (always kept, through Django's storage API) and enqueues
`upload_process`, which parses, validates and stores traces in a Celery worker (or in-process
with `--inline`; the same function either way).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import orjson
from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from common.hygiene import clean_filename
from common.jobs import job_claim, job_enqueue, job_heartbeat, stale, stale_cutoff
from traces import importers, search
from traces.collect import Collector, trace_id_from_raw
from traces.importers.base import ImportReport
from traces.models import Project, Trace, Upload
from traces.reader import (
    ZIP_MAGIC,
    LimitExceeded,
    Limits,
    TooLong,
    format_hint,
    iter_lines,
    not_json,
    open_payload,
    parse_line,
)
from traces.run_source import Qualifier, RunSource, run_read
from traces.signals import upload_done
from traces.store import ChunkedStore
from traces.validate import type_typo, validate_event

FORMATS = ("auto", *dict.fromkeys(["v1", *importers.IMPORTERS]))
# Formats whose files are zip archives (Inspect AI's `.eval`); any other gets the zip hint.
ZIP_FORMATS = ("inspect_ai",)


class UploadRejected(Exception):
    """The upload cannot even be accepted (too large, unknown format): nothing is stored."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def upload_size_check(size: int) -> None:
    """The upload size limit and its message, in one place: raise 413 when `size` bytes pass
    TA_MAX_UPLOAD_BYTES (checked on a declared length, while streaming, and on the stored file)."""
    limit = settings.TA_MAX_UPLOAD_BYTES
    if size > limit:
        raise UploadRejected(
            f"file is larger than the limit of {limit / 1048576:.1f} MiB (TA_MAX_UPLOAD_BYTES)",
            status=413,
        )


def run_source_check(run: RunSource) -> RunSource:
    """Trim the stated run; reject parts that cannot be part of a trace id."""
    parts = {}
    for name in ("model", "agent", "benchmark", "label"):
        value = (getattr(run, name) or "").strip()
        if len(value) > 200:
            raise UploadRejected(f"run {name} is longer than 200 characters")
        if any(ch in value for ch in ":\n\r\t\x00") or (name != "benchmark" and "/" in value):
            raise UploadRejected(
                f"run {name} {value[:60]!r} contains ':', '/' or a line break; "
                "these separate the parts of trace ids"
            )
        parts[name] = value
    return RunSource(**parts)


def _hash_and_size(fileobj: IO[bytes]) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    fileobj.seek(0)
    while chunk := fileobj.read(1 << 20):
        size += len(chunk)
        upload_size_check(size)
        digest.update(chunk)
    fileobj.seek(0)
    return digest.hexdigest(), size


def upload_create(
    *,
    project: Project,
    fileobj: IO[bytes] | bytes,
    filename: str,
    fmt: str = "auto",
    source: str,
    user=None,  # type: ignore[no-untyped-def]
    enqueue: bool = True,
    run: RunSource | None = None,
    origin_path: str = "",
    with_annotations: bool = False,
) -> tuple[Upload, bool]:
    """Keep the raw file and queue it for processing. Returns (upload, created); an identical
    file already uploaded to the project is returned as it is, with created=False.

    `run` is what the uploader states about the run the file records (blank parts are read from
    the file); `origin_path` the path the file was read from, when it says more than its name
    (BFCL result directories name the model)."""
    if fmt not in FORMATS:
        raise UploadRejected(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    run = run_source_check(run or RunSource())
    if isinstance(fileobj, bytes):
        fileobj = ContentFile(fileobj)
    content_hash, size = _hash_and_size(fileobj)
    if size == 0:
        raise UploadRejected("the file is empty")
    existing = Upload.objects.filter(project=project, content_hash=content_hash).first()
    if existing is not None:
        return existing, False
    # Client-supplied: no path parts, CR/LF, quotes or bidi controls (common/hygiene.py).
    filename = clean_filename(filename)
    upload = Upload(
        project=project,
        filename=filename,
        size=size,
        content_hash=content_hash,
        format_requested=fmt,
        source=source,
        run_model=run.model,
        run_agent=run.agent,
        run_benchmark=run.benchmark,
        run_label=run.label,
        origin_path=origin_path.replace("\\", "/")[-500:],
        with_annotations=with_annotations,
        # Token identities are not users; only people are recorded as uploaders.
        created_by=user if getattr(user, "pk", None) is not None else None,
    )
    upload.file.save(_stored_name(filename, content_hash), File(fileobj), save=False)
    try:
        with transaction.atomic():
            upload.save()
            if enqueue:
                transaction.on_commit(lambda: _enqueue(upload.pk))
    except IntegrityError:
        # The same content arrived twice at once; the other request won.
        upload.file.delete(save=False)
        return Upload.objects.get(project=project, content_hash=content_hash), False
    return upload, True


def _stored_name(filename: str, content_hash: str) -> str:
    """The raw file's name in storage: the content's hash and the client's extension (ASCII,
    16 characters at most). Never the client's name itself: 255 characters of it, or fewer
    multi-byte ones, exceed what a file system allows in one path part once storage adds its
    suffix for a name already taken. `Upload.filename` keeps the name as sent."""
    stem, dot, ext = filename.rpartition(".")
    ext = "".join(c for c in ext if c.isascii() and c.isalnum())[:16] if dot and stem else ""
    return f"{content_hash[:32]}.{ext}" if ext else content_hash[:32]


def _enqueue(upload_id: int) -> bool:
    """Queue the upload's processing. With the broker down the upload is still accepted: it
    stays pending (the raw file is safe) and the workers' periodic sweep queues it once the
    broker is back (`uploads_resume_stale`)."""
    # In the function: traces.tasks imports this module (its task calls upload_process).
    from traces.tasks import process_upload

    return job_enqueue(process_upload, upload_id)


def upload_retry(*, upload: Upload) -> bool:
    """Queue a failed upload again; False when it is not in a retryable state."""
    claimed = Upload.objects.filter(pk=upload.pk, status=Upload.Status.FAILED).update(
        status=Upload.Status.PENDING, progress=0.0, failure=""
    )
    if claimed:
        transaction.on_commit(lambda: _enqueue(upload.pk))
    return bool(claimed)


# --- processing ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Progress:
    upload_id: int
    last: float = 0.0

    def report(self, fraction: float, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last > 0.5:
            self.last = now
            job_heartbeat(
                Upload.objects.filter(pk=self.upload_id), progress=min(max(fraction, 0.0), 1.0)
            )


def _claim(upload_id: int) -> Upload | None:
    """Take the upload for processing, exactly once (a conditional update, so a redelivered
    task finds nothing to do) — unless the previous claimant went silent and is presumed dead."""
    if not job_claim(Upload, upload_id, take_over_stale=True, attempts=F("attempts") + 1):
        return None
    upload = Upload.objects.select_related("project").get(pk=upload_id)
    # Partial rows of a crashed attempt are invisible (the upload was never done); clear them.
    Trace.objects.filter(upload=upload).delete()
    return upload


def _events(
    upload: Upload, stream: IO[bytes], fmt: str, collector: Collector, limits: Limits
) -> Iterator[tuple[int, dict, bytes]]:
    """(line, event, payload bytes) for every readable event; errors go to the collector."""
    if fmt == "v1":
        for lineno, line in iter_lines(stream, limits.max_line_bytes):
            if isinstance(line, TooLong):
                collector.error(
                    lineno,
                    trace_id_from_raw(line.head),
                    "$",
                    f"line longer than the limit of {limits.max_line_bytes} bytes "
                    "(TA_MAX_LINE_BYTES)",
                )
                continue
            try:
                value, warning, line = parse_line(line, limits.max_depth)
            except ValueError as exc:
                collector.error(lineno, trace_id_from_raw(line), "$", str(exc))
                continue
            if warning:
                tid = value.get("trace_id") if isinstance(value, dict) else None
                collector.warn(lineno, tid if isinstance(tid, str) else None, warning)
            yield lineno, value, line
        return
    report = ImportReport(
        format=fmt,
        detected=upload.format_requested == "auto",
        filename=upload.origin_path or upload.filename,
    )
    importer = importers.IMPORTERS[fmt]
    if getattr(importer, "keeps_ids", False):  # a round trip: the ids are the stored ones
        for source_event in importer.convert(stream, report):
            yield source_event.line, source_event.event, orjson.dumps(source_event.event)
        name = lambda tid: tid  # noqa: E731
    else:
        qualifier = Qualifier(RunSource.of(upload))
        rewrite = qualifier.event
        for source_event in importer.convert(stream, report):
            event = rewrite(source_event.event)
            yield source_event.line, event, orjson.dumps(event)
        name = qualifier.trace_id
    for err in report.errors:
        collector.error(err.line, name(err.trace_id), err.path, err.message)
    upload.report = report.to_dict()


def upload_process(*, upload_id: int) -> Upload | None:
    """Parse, validate and store one upload. Idempotent: returns None when there is nothing to
    do (already done, or another worker holds it). Bad data never raises: it becomes the
    upload's error report; only infrastructure errors (database gone) propagate, to be retried.
    """
    upload = _claim(upload_id)
    if upload is None:
        return None
    limits = Limits.from_settings()
    progress = _Progress(upload.pk)
    collector = Collector(
        max_events_per_trace=limits.max_events_per_trace,
        max_reported_errors=settings.TA_MAX_REPORTED_ERRORS,
    )

    def conflict(st, other_upload: int) -> None:  # type: ignore[no-untyped-def]
        collector.error(
            st.first_line,
            st.trace_id,
            "$.trace_id",
            f"trace id already stored in this project by upload #{other_upload}; "
            "trace ids must be unique within a project (another run of the same tasks: give "
            "this upload a model, agent or label so its trace ids name the run)",
        )

    size = max(upload.size, 1)
    with upload.file.open("rb") as raw:
        store = ChunkedStore(
            upload,
            chunk_events=settings.TA_INGEST_BATCH_EVENTS,
            on_conflict=conflict,
            on_chunk=lambda: progress.report(0.95 * raw.tell() / size),
        )
        try:
            fmt = upload.format_requested
            zip_format = fmt in ("auto", *ZIP_FORMATS)
            stream, _gz = open_payload(raw, limits, zip_format=zip_format)
            if fmt == "auto":
                head = _head(stream)
                if not head.startswith(ZIP_MAGIC) and (reason := not_json(head)):
                    return _fail(upload, reason)
                try:
                    fmt = importers.detect(head, upload.filename)
                except ValueError as exc:
                    hint = format_hint(head)
                    return _fail(upload, f"{hint} ({exc})" if hint else str(exc))
                if fmt not in ZIP_FORMATS and head.startswith(ZIP_MAGIC):
                    return _fail(upload, format_hint(head))
            upload.format_detected = fmt
            for lineno, event, payload in _events(upload, stream, fmt, collector, limits):
                problems = validate_event(event)
                if not problems and (typo := type_typo(event)) is not None:
                    problems = [typo]
                if problems:
                    tid = event.get("trace_id") if isinstance(event, dict) else None
                    tid = tid if isinstance(tid, str) and tid else None
                    for path, message in problems:
                        collector.error(lineno, tid, path, message)
                    continue
                row = collector.add(lineno, event, payload)
                if row is not None:
                    store.write(row)
        except LimitExceeded as exc:
            store.abort()
            return _fail(upload, str(exc))
        except OSError as exc:
            store.abort()
            return _fail(upload, f"the stored file cannot be read: {exc}")
        except BaseException:
            store.abort()
            raise
        store.close_chunk()  # the last chunk's id conflicts reject traces too
        accepted, rejected = collector.finish()
        store.finish(accepted, rejected)
    if rejected and not accepted and upload.format_detected != "v1":
        upload.report["rejected_all"] = collector.rejected_all(upload.format_detected)

    Upload.objects.filter(pk=upload.pk).update(
        **run_read(upload, accepted),
        status=Upload.Status.DONE,
        progress=1.0,
        format_detected=upload.format_detected,
        traces_accepted=len(accepted),
        traces_rejected=len(rejected),
        events=sum(st.count for st in accepted),
        error_count=collector.error_count,
        errors=[e.to_dict() for e in collector.errors],
        warnings=[w.to_dict() for w in collector.warnings],
        report=upload.report,
        finished_at=timezone.now(),
    )
    upload.refresh_from_db()
    search.index_upload_queue(upload.pk)
    # Listeners outside traces (the auditor re-creates an export's decisions and verdicts).
    upload_done.send(sender=Upload, upload=upload)
    upload.refresh_from_db()
    return upload


def _head(stream: IO[bytes]) -> bytes:
    """The first 64 KiB, without consuming them."""
    peek = getattr(stream, "peek", None)
    if peek is not None:
        head = peek(65536)[:65536]
        if head:
            return head
    head = stream.read(65536)
    stream.seek(0)
    return head


def _fail(upload: Upload, message: str) -> Upload:
    """The whole file is unusable (a limit, unreadable gzip, unknown format). The raw file is
    kept; the user sees why and can upload a corrected file."""
    Upload.objects.filter(pk=upload.pk).update(
        status=Upload.Status.FAILED,
        failure=message,
        finished_at=timezone.now(),
        format_detected=upload.format_detected,
    )
    upload.refresh_from_db()
    return upload


def uploads_resume_stale() -> list[int]:
    """Queue again uploads left behind: running with a silent worker, or pending for longer than
    TA_STALE_SECONDS (their message was lost). Claiming is conditional, so a duplicate task
    does nothing."""
    ids = list(stale(Upload, stale_cutoff()).values_list("pk", flat=True))
    for upload_id in ids:
        _enqueue(upload_id)
    return ids
