"""One pass of an upload's processing: read the stored file with its format's importer, put the
run into the trace ids, validate every event and store the traces (`traces.services.upload_process`
calls it, twice when a run part of the file clashes with another upload's)."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import orjson
from django.conf import settings
from django.utils import timezone

from common.jobs import job_heartbeat
from traces import importers
from traces.collect import Collector, trace_id_from_raw
from traces.importers.base import ImportReport
from traces.models import Upload
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
from traces.run_source import Qualifier, RunSource, default_key
from traces.store import ChunkedStore
from traces.validate import type_typo, validate_event

# Formats whose files are zip archives (Inspect AI's `.eval`); any other gets the zip hint.
ZIP_FORMATS = ("inspect_ai",)


@dataclass(slots=True)
class Progress:
    upload_id: int
    last: float = 0.0

    def report(self, fraction: float, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last > 0.5:
            self.last = now
            job_heartbeat(
                Upload.objects.filter(pk=self.upload_id), progress=min(max(fraction, 0.0), 1.0)
            )


def _events(
    upload: Upload,
    stream: IO[bytes],
    fmt: str,
    collector: Collector,
    limits: Limits,
    run_keys: dict[str, str],
    default: str,
    taken: frozenset[str],
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
    if buffered(upload):
        # In the function: the receiver's modules import the services, which import this one.
        from traces.otlp_receiver.buffer import upload_events

        source_events = upload_events(upload.pk, report)
    else:
        source_events = importer.convert(stream, report)
    if getattr(importer, "keeps_ids", False):  # a round trip: the ids are the stored ones
        for source_event in source_events:
            yield source_event.line, source_event.event, orjson.dumps(source_event.event)
        name = lambda tid: tid  # noqa: E731
    else:
        qualifier = Qualifier(
            RunSource.of(upload), default=default, upload_id=upload.pk, taken=taken
        )
        qualifier.keys = run_keys
        rewrite = qualifier.event
        for source_event in source_events:
            event = rewrite(source_event.event)
            yield source_event.line, event, orjson.dumps(event)
        name = qualifier.trace_id
    for err in report.errors:
        collector.error(err.line, name(err.trace_id), err.path, err.message)
    upload.report = report.to_dict()


def store_once(
    upload: Upload, limits: Limits, progress: Progress, taken: frozenset[str]
) -> Upload | tuple[Collector, list, list, frozenset[str]]:
    """Read the file and store its traces once: the failed upload, or (collector, accepted,
    rejected, run parts whose ids another upload holds)."""
    collector = Collector(
        max_events_per_trace=limits.max_events_per_trace,
        max_reported_errors=settings.TA_MAX_REPORTED_ERRORS,
    )
    run_keys: dict[str, str] = {}
    default = default_key(upload.origin_path or upload.filename, upload.pk)
    clashed: set[str] = set()

    def conflict(st, other_upload: int) -> None:  # type: ignore[no-untyped-def]
        key = run_keys.get(st.trace_id, "")
        if key and key != default:
            clashed.add(key)
        collector.error(
            st.first_line,
            st.trace_id,
            "$.trace_id",
            f"trace id already stored in this project by upload #{other_upload}; "
            "trace ids must be unique within a project (another run of the same tasks: give "
            "this upload a model, agent or label so its trace ids name the run — rename the "
            "run on the upload's page)",
        )

    size = max(upload.size, 1)
    with io.BytesIO() if buffered(upload) else upload.file.open("rb") as raw:
        store = ChunkedStore(
            upload,
            chunk_events=settings.TA_INGEST_BATCH_EVENTS,
            on_conflict=conflict,
            on_chunk=lambda: progress.report(0.95 * raw.tell() / size),
            run_source_of=lambda tid: run_keys.get(tid, ""),
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
            events = _events(upload, stream, fmt, collector, limits, run_keys, default, taken)
            for lineno, event, payload in events:
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
    return collector, accepted, rejected, frozenset(clashed)


def buffered(upload: Upload) -> bool:
    """The upload's content is the OTLP receiver's buffered spans, not a stored file."""
    return upload.source == Upload.Source.OTLP and not upload.file.name


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
