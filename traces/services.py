"""Ingestion: the one service behind the upload page, the REST API and `manage.py ingest`.

`upload_create` stores the raw file (always kept, through Django's storage API) and enqueues
`upload_process`, which parses, validates and stores traces in a Celery worker (or in-process
with `--inline`; the same function either way).
"""

from __future__ import annotations

import hashlib
from typing import IO

from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from common.hygiene import clean_filename
from common.jobs import job_claim, job_enqueue, stale, stale_cutoff
from traces import importers, search
from traces.ingest_pass import Progress, store_once
from traces.models import Project, Trace, Upload
from traces.reader import (
    Limits,
)
from traces.run_source import RunSource, request_key, run_read
from traces.signals import upload_done

FORMATS = ("auto", *dict.fromkeys(["v1", *importers.IMPORTERS]))


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
    """Trim the stated run; reject parts that cannot be part of a trace id. ':' separates a
    trace id's parts (`traces.run_source.qualify`), so no run part has one; '/' is allowed, as
    model names are often `org/model` (`openai/gpt-oss-20b`): the run part's '/'-joined name is
    never split again, and trace pages, filters and exports address traces by number or by
    query parameter, never by a path segment of the name."""
    parts = {}
    for name in ("model", "agent", "benchmark", "label"):
        value = (getattr(run, name) or "").strip()
        if len(value) > 200:
            raise UploadRejected(f"run {name} is longer than 200 characters")
        if any(ch in value for ch in ":\n\r\t\x00"):
            raise UploadRejected(
                f"run {name} {value[:60]!r} contains ':' or a line break; "
                "':' separates the parts of trace ids"
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
    """Keep the raw file and queue it for processing. Returns (upload, created); the same file
    already uploaded to the project with the same format and stated run is returned as it is,
    with created=False (the same bytes under another run or format are a new upload).

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
    request = request_key(fmt, run)
    existing = upload_same_request(project, content_hash, fmt, run)
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
        run_stated=run.stated(),
        request_key=request,
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
        return Upload.objects.get(
            project=project, content_hash=content_hash, request_key=request
        ), False
    return upload, True


def upload_create_buffered(
    *, project: Project, filename: str, content_hash: str, size: int, fmt: str, source: str
) -> Upload:
    """Queue an upload whose content is already in the database — the OTLP receiver's span
    buffer, whose rows name the upload — so no file is stored: processing reads the content
    where it is (`ingest_pass`), and so does the raw-file download. Call it in a transaction
    with what marks the content as the upload's; processing is queued on commit."""
    run = RunSource()
    upload = Upload.objects.create(
        project=project,
        filename=clean_filename(filename),
        size=size,
        content_hash=content_hash,
        format_requested=fmt,
        source=source,
        run_stated=run.stated(),
        request_key=request_key(fmt, run),
    )
    transaction.on_commit(lambda: _enqueue(upload.pk))
    return upload


def upload_same_request(
    project: Project, content_hash: str, fmt: str, run: RunSource, *, exclude: int | None = None
) -> Upload | None:
    """The upload of the project that holds these bytes as this request (format and stated run).
    Uploads stored before requests were kept (blank key) match on content and format when
    every stated part is what they record."""
    same = Upload.objects.filter(project=project, content_hash=content_hash).exclude(pk=exclude)
    found = same.filter(request_key=request_key(fmt, run)).first()
    if found is not None:
        return found
    for old in same.filter(request_key="", format_requested=fmt):
        if all(not v or v == getattr(old, f"run_{k}") for k, v in run.stated().items()):
            return old
    return None


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


def _claim(upload_id: int) -> Upload | None:
    """Take the upload for processing, exactly once (a conditional update, so a redelivered
    task finds nothing to do) — unless the previous claimant went silent and is presumed dead."""
    if not job_claim(Upload, upload_id, take_over_stale=True, attempts=F("attempts") + 1):
        return None
    upload = Upload.objects.select_related("project").get(pk=upload_id)
    # Partial rows of a crashed attempt are invisible (the upload was never done); clear them.
    Trace.objects.filter(upload=upload).delete()
    return upload


def upload_process(*, upload_id: int) -> Upload | None:
    """Parse, validate and store one upload. Idempotent: returns None when there is nothing to
    do (already done, or another worker holds it). Bad data never raises: it becomes the
    upload's error report; only infrastructure errors (database gone) propagate, to be retried.

    A run part (model/agent/label) whose trace ids another upload of the project already holds
    names another run of the same tasks: the file is read again with the upload number added to
    that run part (`gpt-4o@12`), so no trace of this run is stored under the other's ids and
    none is mixed into it. Files of one run that hold other tasks (BFCL's one file per
    category) keep the plain run part.
    """
    upload = _claim(upload_id)
    if upload is None:
        return None
    limits = Limits.from_settings()
    progress = Progress(upload.pk)
    taken: frozenset[str] = frozenset()
    for _attempt in range(3):
        done = store_once(upload, limits, progress, taken)
        if isinstance(done, Upload):
            return done
        collector, accepted, rejected, clashed = done
        if not clashed - taken:
            break
        Trace.objects.filter(upload=upload).delete()
        taken |= clashed
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


def uploads_resume_stale() -> list[int]:
    """Queue again uploads left behind: running with a silent worker, or pending for longer than
    TA_STALE_SECONDS (their message was lost). Claiming is conditional, so a duplicate task
    does nothing."""
    ids = list(stale(Upload, stale_cutoff()).values_list("pk", flat=True))
    for upload_id in ids:
        _enqueue(upload_id)
    return ids
