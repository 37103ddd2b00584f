"""A built export as a download (the page and the API serve the same response), and who may
not have one."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import FileResponse, HttpResponse

from auditor.exports.models import Export
from auditor.exports.selectors import export_open
from auditor.exports.services import ExportRejected
from auditor.exports.writers import CONTENT_TYPES
from auditor.runs import blindness
from traces.models import Project

REFUSED = "Annotators do not export: an export holds the audit's decisions and the traces' events."


def refuse_annotator(user, project: Project) -> None:  # type: ignore[no-untyped-def]
    """403 for the annotator role, who sees no audit decisions (`auditor.runs.blindness`)."""
    if not blindness.sees_decisions(user=user, project=project):
        raise PermissionDenied(REFUSED)


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
