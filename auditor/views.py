"""Pages of audit runs (the full audit UI — trajectories, timelines, charts — builds on these)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from auditor import selectors
from auditor.services import (
    ENVIRONMENTS,
    JUDGES,
    AuditRejected,
    audit_run_create,
    audit_run_retry_errors,
)
from policies import POLICIES
from traces import selectors as trace_selectors


@login_required
def run_new(request: HttpRequest, pk: int) -> HttpResponse:
    project = trace_selectors.project_get(user=request.user, project_id=pk)
    if not trace_selectors.can_write(user=request.user, project=project):
        raise PermissionDenied("viewers cannot start audits")
    error = None
    if request.method == "POST":
        try:
            run = audit_run_create(
                project=project,
                policies=request.POST.getlist("policies") or list(POLICIES),
                judge=request.POST.get("judge", "heuristic"),
                environment=request.POST.get("environment", "auto"),
                label=request.POST.get("label", ""),
                user=request.user,
            )
        except AuditRejected as exc:
            error = str(exc)
        else:
            return redirect(run)
    return render(
        request,
        "auditor/run_new.html",
        {
            "project": project,
            "policies": POLICIES,
            "judges": JUDGES,
            "environments": ENVIRONMENTS,
            "error": error,
        },
        status=400 if error else 200,
    )


@login_required
@require_POST
def run_retry(request: HttpRequest, pk: int) -> HttpResponse:
    run = selectors.run_get(user=request.user, run_id=pk)
    if not trace_selectors.can_write(user=request.user, project=run.project):
        raise PermissionDenied("viewers cannot retry audits")
    n = audit_run_retry_errors(run=run)
    messages.info(request, f"{n} failed traces queued again." if n else "Nothing to retry.")
    return redirect(run)
