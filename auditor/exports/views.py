"""Export pages: a project's exports with a form to ask for one, one export's page (status
polled with htmx while it builds, then its manifest), and the download at a stable URL."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from auditor.exports import selectors, services
from auditor.exports.download import download_response, refuse_annotator
from auditor.exports.models import Export
from auditor.runs import blindness
from auditor.runs.models import AuditResult, AuditRun
from common.rendering import render_page_or_fragment
from policies import POLICIES
from traces import selectors as trace_selectors


def _choices(request: HttpRequest, project) -> dict:  # type: ignore[no-untyped-def]
    traces = trace_selectors.trace_list(user=request.user, project=project)

    def values(field: str) -> list[str]:
        return list(
            traces.exclude(**{field: ""})
            .order_by(field)
            .values_list(field, flat=True)
            .distinct()[:300]
        )

    return {
        "runs": AuditRun.objects.filter(project=project, status=AuditRun.Status.DONE)[:50],
        "policies": POLICIES,
        "transitions": AuditResult.Transition.values,
        "models": values("model"),
        "benchmarks": values("benchmark"),
        "categories": values("category"),
        "formats": Export.Format.choices,
    }


@login_required
def export_list(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the project's exports and the form; POST: ask for an export (any member may: an
    export holds nothing the member cannot already read)."""
    project = trace_selectors.project_get(user=request.user, project_id=pk)
    error = None
    if request.method == "POST":
        refuse_annotator(request.user, project)
        post = request.POST
        filters = {
            "runs": post.getlist("runs"),
            "policy": post.getlist("policy"),
            "transition": post.getlist("transition"),
            "model": post.getlist("model"),
            "benchmark": post.getlist("benchmark"),
            "category": post.getlist("category"),
        }
        try:
            export = services.export_create(
                project=project,
                format=post.get("format", ""),
                filters=filters,
                user=request.user,
            )
        except services.ExportRejected as exc:
            error = str(exc)
        else:
            # The build may be done before this page shows: say what happened, not a state.
            messages.success(request, f"Export #{export.pk} requested; its status is below.")
            return redirect(export)
    ctx = {
        "project": project,
        "exports": selectors.export_list(user=request.user, project=project)[:100],
        "error": error,
        "can_export": blindness.sees_decisions(user=request.user, project=project),
        **_choices(request, project),
    }
    return render(request, "auditor/export_list.html", ctx, status=400 if error else 200)


@login_required
def export_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The export's page; while it builds, htmx polls it and swaps `#status`."""
    export = selectors.export_get(user=request.user, export_id=pk)
    ctx = {
        "export": export,
        "project": export.project,
        "manifest_text": selectors.manifest_text(export) if export.manifest else "",
    }
    return render_page_or_fragment(request, "auditor/export.html", ctx, fragment="#status")


@login_required
def export_download(request: HttpRequest, pk: int) -> HttpResponse:
    export = selectors.export_get(user=request.user, export_id=pk)
    refuse_annotator(request.user, export.project)
    return download_response(export)
