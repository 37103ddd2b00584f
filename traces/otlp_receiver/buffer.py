"""Reading the span buffer back: the spans an upload of the receiver took, as the one OTLP/JSON
request they make.

An upload the receiver creates stores no file: its spans stay in `traces_otlpspan`, naming it,
and its processing hands them to the OTLP importer as an already parsed request
(`OTLPImporter.convert_requests`) — from there the path is the file import's, span for span.
The request groups spans by resource and scope in the order they were received, so the
document a person downloads (`document`) is the request the import read, and error paths in
the upload's report point into it.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson
from django.db import connection

from traces.importers.base import ImportReport, SourceEvent
from traces.importers.otlp import OTLPImporter
from traces.otlp_receiver.models import OtlpSpan


def upload_request(upload_id: int) -> dict:
    """The upload's spans as one ExportTraceServiceRequest. Read as jsonb text and parsed with
    orjson: a trace's resource and scope are the same on most of its spans, so each distinct
    one is parsed once."""
    cast = "::text" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT resource{cast}, scope{cast}, span{cast} FROM {OtlpSpan._meta.db_table}"
            " WHERE upload_id = %s ORDER BY received_at, id",
            [upload_id],
        )
        rows = cursor.fetchall()
    groups: dict[str, tuple[dict, dict[str, tuple[dict, list]]]] = {}
    for resource, scope, span in rows:
        if resource not in groups:
            groups[resource] = (orjson.loads(resource), {})
        scopes = groups[resource][1]
        if scope not in scopes:
            scopes[scope] = (orjson.loads(scope), [])
        scopes[scope][1].append(orjson.loads(span))
    return {
        "resourceSpans": [
            {
                "resource": res,
                "scopeSpans": [{"scope": sc, "spans": spans} for sc, spans in scopes.values()],
            }
            for res, scopes in groups.values()
        ]
    }


def upload_events(upload_id: int, report: ImportReport) -> Iterator[SourceEvent]:
    """The upload's events, by the OTLP importer — what a file of `document` gives."""
    yield from OTLPImporter().convert_requests([(1, upload_request(upload_id))], report)


def document(upload_id: int) -> bytes:
    """The upload's spans as an OTLP/JSON file (the upload's raw file, for download)."""
    return orjson.dumps(upload_request(upload_id))
