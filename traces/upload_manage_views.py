"""Pages that change a stored upload: rename its run, process it again, delete it (owners
only; the forms are in templates/traces/upload_manage.html, shown on the upload page)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from traces import selectors
from traces.links import page_url
from traces.models import Upload
from traces.run_source import RunSource
from traces.services import UploadRejected
from traces.upload_manage import upload_delete, upload_dependents, upload_rename, upload_reprocess


def owned_upload(request: HttpRequest, pk: int) -> Upload:
    """The upload, when the user owns its project: 404 outside it, 403 for other roles."""
    upload = selectors.upload_get(user=request.user, upload_id=pk)
    if selectors.role_of(user=request.user, project=upload.project) != "owner":
        raise PermissionDenied("only the project's owners change or delete uploads")
    return upload


def _run_from(post) -> RunSource:  # type: ignore[no-untyped-def]
    return RunSource(
        model=post.get("run_model", ""),
        agent=post.get("run_agent", ""),
        benchmark=post.get("run_benchmark", ""),
        label=post.get("run_label", ""),
    )


@login_required
@require_POST
def upload_rename_view(request: HttpRequest, pk: int) -> HttpResponse:
    upload = owned_upload(request, pk)
    try:
        upload = upload_rename(upload=upload, run=_run_from(request.POST))
    except UploadRejected as exc:
        messages.error(request, f"Not renamed: {exc}")
    else:
        messages.success(request, f"Run renamed; its {upload.traces_accepted} traces follow.")
    return redirect(upload)


@login_required
@require_POST
def upload_reprocess_view(request: HttpRequest, pk: int) -> HttpResponse:
    upload = owned_upload(request, pk)
    try:
        upload_reprocess(
            upload=upload, fmt=request.POST.get("format") or None, run=_run_from(request.POST)
        )
    except UploadRejected as exc:
        messages.error(request, f"Not processed again: {exc}")
    else:
        messages.info(request, "The file is being processed again.")
    return redirect(upload)


@login_required
def upload_delete_view(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: what deleting takes with it, and a confirmation form; POST: delete."""
    upload = owned_upload(request, pk)
    if request.method == "POST":
        try:
            gone = upload_delete(upload=upload)
        except UploadRejected as exc:
            messages.error(request, f"Not deleted: {exc}")
            return redirect(upload)
        what = ", ".join(f"{n} {name}" for name, n in gone) or "no traces"
        messages.success(request, f"Upload #{pk} ({upload.filename}) deleted with {what}.")
        return redirect(page_url("project", upload.project_id))
    return render(
        request,
        "traces/upload_delete.html",
        {"upload": upload, "project": upload.project, "goes": upload_dependents(upload)},
    )
