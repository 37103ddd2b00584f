"""Exports read back, scoped to what the caller may see: the list, one export (404 for an
outsider), its file for streaming, its manifest as text."""

from __future__ import annotations

from typing import IO

import orjson
from django.core.files.storage import default_storage
from django.db.models import QuerySet
from django.http import Http404

from auditor.exports.models import Export
from auditor.exports.services import ExportRejected
from traces import selectors as trace_selectors
from traces.models import Project


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


def manifest_text(export: Export) -> str:
    return orjson.dumps(export.manifest, option=orjson.OPT_INDENT_2).decode()
