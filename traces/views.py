"""Pages of ingestion and traces: function-based views, one template per page with htmx
partials (`template.html#partial`)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from pathlib import Path
from typing import IO

import orjson
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseForbidden,
    JsonResponse,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_POST

from common.hygiene import clean_filename, csv_safe
from common.rendering import render_page_or_fragment
from traces import selectors
from traces.error_groups import group_errors
from traces.ingest_pass import buffered
from traces.links import page_url
from traces.models import ExecutionRefused, ProjectToken, Upload
from traces.otlp_receiver.buffer import document
from traces.run_source import RunSource
from traces.services import (
    FORMATS,
    UploadRejected,
    upload_create,
    upload_retry,
    upload_size_check,
)
from traces.upload_handlers import upload_too_large

SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "trace-v1.schema.json"
EXAMPLES_PATH = Path(__file__).resolve().parent / "schema" / "examples"


@login_required
def home(request: HttpRequest) -> HttpResponse:
    projects = list(selectors.project_list(user=request.user))
    if len(projects) == 1:
        return redirect(projects[0])
    return render(request, "traces/home.html", {"projects": projects})


@login_required
@require_POST
def token_create(request: HttpRequest, pk: int) -> HttpResponse:
    project = selectors.project_get(user=request.user, project_id=pk)
    if selectors.role_of(user=request.user, project=project) != "owner":
        raise PermissionDenied("only owners create tokens")
    name = (request.POST.get("name") or "agent").strip()[:100]
    scope = request.POST.get("scope") or ProjectToken.Scope.UPLOAD
    days = (request.POST.get("expires_days") or "").strip()
    if scope not in ProjectToken.Scope.values:
        messages.error(request, f"unknown token scope {scope!r}")
        return redirect(project)
    if days and not (days.isdigit() and 1 <= int(days) <= 3650):
        messages.error(request, "expiry: a number of days from 1 to 3650, or empty for never")
        return redirect(project)
    expires_at = timezone.now() + timedelta(days=int(days)) if days else None
    _token, raw = ProjectToken.issue(project=project, name=name, scope=scope, expires_at=expires_at)
    # Shown once on the next page, never stored in clear.
    request.session["new_token"] = raw
    return redirect(project)


@login_required
@require_POST
def project_sandbox(request: HttpRequest, pk: int) -> HttpResponse:
    """Switch sandboxed execution of code candidates on or off (owners only: it executes
    uploaded code on the workers' machines)."""
    project = selectors.project_get(user=request.user, project_id=pk)
    if selectors.role_of(user=request.user, project=project) != "owner":
        raise PermissionDenied("only owners switch code execution")
    value = request.POST.get("execute_code_candidates", "")
    if value not in ("on", "off"):
        return HttpResponseBadRequest("execute_code_candidates must be 'on' or 'off'")
    project.execute_code_candidates = value == "on"
    try:
        project.save(update_fields=["execute_code_candidates"])
    except ExecutionRefused as exc:
        return HttpResponseForbidden(f"Code execution refused: {exc}", content_type="text/plain")
    messages.warning(
        request,
        "Code candidates will be executed in a sandbox by the workers of the next audit."
        if project.execute_code_candidates
        else "Code candidates will not be executed.",
    )
    return redirect(project)


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int, token_id: int) -> HttpResponse:
    project = selectors.project_get(user=request.user, project_id=pk)
    if selectors.role_of(user=request.user, project=project) != "owner":
        raise PermissionDenied("only owners revoke tokens")
    token = project.tokens.filter(pk=token_id, revoked_at__isnull=True).first()
    if token is None:
        raise Http404("no such active token")
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    messages.info(request, f"Token {token.name} ({token.hint}…) revoked: it no longer works.")
    return redirect(project)


@login_required
def upload_new(request: HttpRequest, pk: int) -> HttpResponse:
    project = selectors.project_get(user=request.user, project_id=pk)
    if not selectors.can_write(user=request.user, project=project):
        # A page that says why and who can help, not a bare 403 (the status stays 403).
        return render(
            request,
            "traces/upload_forbidden.html",
            {
                "project": project,
                "role": selectors.role_of(user=request.user, project=project),
                "owners": selectors.project_owners(project=project),
            },
            status=403,
        )
    wants_json = request.headers.get("Accept", "").startswith("application/json")
    error = None
    if request.method == "POST":
        fileobj = request.FILES.get("file")
        fmt = request.POST.get("format", "auto")
        if upload_too_large(request):  # the upload handler stopped reading at the limit
            try:
                upload_size_check(settings.TA_MAX_UPLOAD_BYTES + 1)
            except UploadRejected as exc:
                error = str(exc)
        elif fileobj is None:
            error = "choose a file to upload"
        else:
            try:
                upload, created = upload_create(
                    project=project,
                    fileobj=fileobj,
                    filename=fileobj.name,
                    fmt=fmt,
                    source=Upload.Source.WEB,
                    user=request.user,
                    run=RunSource(
                        model=request.POST.get("run_model", ""),
                        agent=request.POST.get("run_agent", ""),
                        benchmark=request.POST.get("run_benchmark", ""),
                        label=request.POST.get("run_label", ""),
                    ),
                    with_annotations=request.POST.get("with_annotations") == "on",
                )
            except UploadRejected as exc:
                error = str(exc)
            else:
                if not created:
                    messages.info(
                        request,
                        "This exact file was uploaded before with the same format and run; "
                        "nothing changed (give another run name to store it as another run).",
                    )
                if wants_json:  # the drag-and-drop script follows this itself
                    return JsonResponse(
                        {"url": upload.get_absolute_url(), "duplicate": not created}
                    )
                return redirect(upload)
        if wants_json:
            return JsonResponse({"error": error}, status=400)
    return render(
        request,
        "traces/upload_new.html",
        {
            "project": project,
            "formats": FORMATS,
            "error": error,
            "max_mib": settings.TA_MAX_UPLOAD_BYTES // (1024 * 1024),
        },
        status=400 if error else 200,
    )


@login_required
def upload_detail(request: HttpRequest, pk: int) -> HttpResponse:
    upload = selectors.upload_get(user=request.user, upload_id=pk)
    return render_page_or_fragment(
        request,
        "traces/upload.html",
        {
            "upload": upload,
            "project": upload.project,
            "can_upload": selectors.can_write(user=request.user, project=upload.project),
            "can_manage": selectors.role_of(user=request.user, project=upload.project) == "owner",
            "formats": FORMATS,
            "run_sources": list(
                upload.traces.exclude(run_source="")
                .values_list("run_source", flat=True)
                .distinct()[:6]
            ),
            "traces_url": page_url("trace-list", upload.project_id),
            "audit_url": _audit_url(upload),
            "error_groups": group_errors(upload.errors),
        },
        fragment="#status",
    )


def _audit_url(upload: Upload) -> str | None:
    """ "Audit these traces": the audit form narrowed to this upload. The audit form is served
    by auditor and named in TRACES_PAGES (traces reverses no auditor name itself)."""
    name = (getattr(settings, "TRACES_PAGES", None) or {}).get("audit-new")
    if not name:
        return None
    return reverse(name, args=[upload.project_id]) + f"?upload={upload.pk}"


@login_required
def upload_errors(request: HttpRequest, pk: int) -> HttpResponse:
    """The error report as a download: JSON (default) or CSV."""
    upload = selectors.upload_get(user=request.user, upload_id=pk)
    # Cleaned again: a stored name may hold CR/LF or quotes, which a header must not.
    stem = Path(clean_filename(upload.filename)).stem
    if request.GET.get("format") == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(["line", "trace_id", "path", "message"])
        for e in upload.errors:
            # Trace ids, paths and messages quote the uploaded file: agent-controlled.
            writer.writerow(
                [
                    csv_safe(e.get("line")),
                    csv_safe(e.get("trace_id") or ""),
                    csv_safe(e.get("path")),
                    csv_safe(e.get("message")),
                ]
            )
        response = HttpResponse(buf.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = content_disposition_header(True, f"{stem}-errors.csv")
        return response
    body = {
        "upload": upload.pk,
        "filename": upload.filename,
        "status": upload.status,
        "failure": upload.failure,
        "error_count": upload.error_count,
        "errors_shown": len(upload.errors),
        "errors": upload.errors,
        "warnings": upload.warnings,
        "report": upload.report,
    }
    response = HttpResponse(
        orjson.dumps(body, option=orjson.OPT_INDENT_2), content_type="application/json"
    )
    response["Content-Disposition"] = content_disposition_header(True, f"{stem}-errors.json")
    return response


@login_required
def upload_raw(request: HttpRequest, pk: int) -> FileResponse:
    upload = selectors.upload_get(user=request.user, upload_id=pk)
    if buffered(upload):
        # The receiver's upload: its file is its buffered spans as one OTLP/JSON request.
        raw: IO[bytes] = io.BytesIO(document(upload.pk))
    else:
        raw = upload.file.open("rb")
    return FileResponse(
        raw,
        as_attachment=True,
        filename=upload.filename,
        content_type="application/octet-stream",
    )


@login_required
@require_POST
def upload_dismiss(request: HttpRequest, pk: int) -> HttpResponse:
    """Take a failed upload off the dashboard's "Needs attention" (owners). The upload, its raw
    file and its error report are kept; its own page still shows it."""
    upload = selectors.upload_get(user=request.user, upload_id=pk)
    if selectors.role_of(user=request.user, project=upload.project) != "owner":
        raise PermissionDenied("only owners dismiss uploads")
    if not upload.needs_attention:
        messages.warning(request, "Only an upload that needs attention can be dismissed.")
    else:
        Upload.objects.filter(pk=upload.pk).update(dismissed=True)
        messages.info(request, f"Upload {upload.filename} dismissed from Needs attention.")
    return redirect(upload.project)


@login_required
@require_POST
def upload_retry_view(request: HttpRequest, pk: int) -> HttpResponse:
    upload = selectors.upload_get(user=request.user, upload_id=pk)
    if not selectors.can_write(user=request.user, project=upload.project):
        raise PermissionDenied("viewers cannot retry uploads")
    if not upload_retry(upload=upload):
        messages.warning(request, "Only a failed upload can be retried.")
    return redirect(upload)


def format_docs(request: HttpRequest) -> HttpResponse:
    examples = []
    for path in sorted(EXAMPLES_PATH.glob("*.jsonl")):
        examples.append({"name": path.stem.replace("_", " "), "text": path.read_text()})
    return render(
        request,
        "traces/format.html",
        {"examples": examples, "schema_url": reverse("traces:schema-v1")},
    )


def format_schema(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(SCHEMA_PATH.read_bytes(), content_type="application/schema+json")
    response["Access-Control-Allow-Origin"] = "*"
    return response
