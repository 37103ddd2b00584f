"""Read-side queries of the audit domain, scoped through the traces selectors."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from auditor.models import AuditItem, AuditRun
from traces import selectors as trace_selectors


def run_list(*, user, project=None) -> QuerySet[AuditRun]:  # type: ignore[no-untyped-def]
    qs = AuditRun.objects.filter(project__in=trace_selectors.project_list(user=user))
    if project is not None:
        qs = qs.filter(project=project)
    return qs.select_related("project")


def run_get(*, user, run_id: int) -> AuditRun:  # type: ignore[no-untyped-def]
    run = run_list(user=user).filter(pk=run_id).first()
    if run is None:
        raise Http404("no such audit run")
    return run


def run_errors(*, run: AuditRun, limit: int = 50) -> list[AuditItem]:
    return list(
        run.items.filter(status=AuditItem.Status.ERROR)
        .select_related("trace")
        .order_by("id")[:limit]
    )


def policy_tables(run: AuditRun) -> list[dict]:
    """Per policy: the overall row and the per-category rows, shaped for the template."""
    out = []
    for policy in run.policies:
        s = (run.summary or {}).get(policy) or {}
        overall = s.get("overall") or {}
        cats = [{"category": c, **row} for c, row in (s.get("per_category") or {}).items()]
        out.append({"policy": policy, "summary": s, "overall": overall, "categories": cats})
    return out
