"""Pages of audit runs (the full audit UI — trajectories, timelines, charts — builds on these)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from auditor import selectors
from auditor.models import AuditRun
from auditor.services import (
    ENVIRONMENTS,
    JUDGES,
    AuditRejected,
    audit_run_create,
    audit_run_retry_errors,
)
from policies import POLICIES
from traces import selectors as trace_selectors


def _may_run(request: HttpRequest, project) -> bool:  # type: ignore[no-untyped-def]
    return trace_selectors.role_of(user=request.user, project=project) in ("owner", "annotator")


@login_required
def project_dashboard(request: HttpRequest, pk: int) -> HttpResponse:
    """The project's front page: uploads, audit runs and their headline numbers. It lives in
    auditor because it shows both domains (traces must not depend on auditor, SPEC §2)."""
    project = trace_selectors.project_get(user=request.user, project_id=pk)
    role = trace_selectors.role_of(user=request.user, project=project)
    uploads = project.uploads.all()[:50]
    ctx = {
        **_run_rows(project),
        "project": project,
        "role": role,
        "uploads": uploads,
        "trace_count": trace_selectors.trace_list(user=request.user, project=project).count(),
        "tokens": project.tokens.filter(revoked_at__isnull=True) if role == "owner" else [],
        "new_token": request.session.pop("new_token", None),
    }
    return render(request, "auditor/project.html", ctx)


def _run_rows(project) -> dict:  # type: ignore[no-untyped-def]
    """Recent audit runs with rescue/harm per policy."""
    runs = list(AuditRun.objects.filter(project=project)[:10])
    policies = list(dict.fromkeys(p for r in runs for p in r.policies))
    rows = []
    for r in runs:
        cells = []
        for p in policies:
            t = (((r.summary or {}).get(p) or {}).get("overall") or {}).get("transitions")
            cells.append(t)
        rows.append({"run": r, "cells": cells})
    return {"runs": rows, "headline_policies": policies}


@login_required
def run_new(request: HttpRequest, pk: int) -> HttpResponse:
    project = trace_selectors.project_get(user=request.user, project_id=pk)
    if not _may_run(request, project):
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
    if not _may_run(request, run.project):
        raise PermissionDenied("viewers cannot retry audits")
    n = audit_run_retry_errors(run=run)
    messages.info(request, f"{n} failed traces queued again." if n else "Nothing to retry.")
    return redirect(run)
