"""A built export as a download (the page and the API serve the same response)."""

from __future__ import annotations

from django.http import FileResponse, HttpResponse

from auditor.exports.models import Export
from auditor.exports.selectors import export_open
from auditor.exports.services import ExportRejected
from auditor.exports.writers import CONTENT_TYPES


def download_response(export: Export) -> HttpResponse:
    """The snapshot as an attachment, streamed from storage; 409 while it is not built. The
    content hash is the ETag: a snapshot never changes, so neither does its tag."""
    try:
        fh = export_open(export)
    except ExportRejected as exc:
        return HttpResponse(str(exc), status=409, content_type="text/plain; charset=utf-8")
    response = FileResponse(
        fh,
        as_attachment=True,
        filename=export.filename,
        content_type=CONTENT_TYPES[export.format],
    )
    response["ETag"] = f'"{export.manifest.get("content_hash", "")}"'
    response["Cache-Control"] = "private, max-age=31536000, immutable"
    return response
