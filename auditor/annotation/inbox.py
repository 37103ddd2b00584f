"""The signed-in user's inbox: every queue, across their projects, with items left for them,
and "next item" — the first of those queues, one click from anywhere (linked from the header)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, F, OuterRef, Q, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from auditor.annotation.models import AnnotationItem, AnnotationQueue, Verdict
from traces.models import Membership
from traces.selectors import WRITE_ROLES


def inbox_queues(*, user) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """Queues of the projects where the user annotates, each with the items left for them:
    open, short of k verdicts, not answered or skipped by them, and not held by someone else's
    live claim. Queues with nothing left are listed after, with `left` 0. Newest queue first
    within each group."""
    if not getattr(user, "is_authenticated", False) or getattr(user, "project", None):
        return []
    project_ids = Membership.objects.filter(user=user, role__in=WRITE_ROLES).values("project_id")
    now = timezone.now()
    answered = Verdict.objects.filter(annotator=user, item=OuterRef("pk")).values("pk")[:1]
    left_items = (
        AnnotationItem.objects.filter(queue=OuterRef("pk"), status="open")
        .filter(verdicts_count__lt=OuterRef("k"))
        .filter(Q(claimed_by__isnull=True) | Q(claimed_by=user) | Q(lease_until__lte=now))
        .annotate(mine=Subquery(answered))
        .filter(mine__isnull=True)
        .order_by()
        .values("queue")
        .annotate(n=Count("pk"))
        .values("n")
    )
    queues = (
        AnnotationQueue.objects.filter(run__project__in=project_ids)
        .select_related("run__project")
        .annotate(left=Subquery(left_items))
        .annotate(
            mine=Count("items__verdicts", filter=Q(items__verdicts__annotator=user)),
            total=Count("items", distinct=True),
        )
        .order_by(F("left").desc(nulls_last=True), "-created_at", "-id")
    )
    rows = []
    for q in queues:
        rows.append(
            {
                "queue": q,
                "project": q.run.project,
                "run": q.run,
                "left": q.left or 0,
                "mine": q.mine,
                "total": q.total,
            }
        )
    return rows


@login_required
def inbox(request: HttpRequest) -> HttpResponse:
    rows = inbox_queues(user=request.user)
    todo = [r for r in rows if r["left"]]
    return render(
        request,
        "auditor/inbox.html",
        {
            "todo": todo,
            "finished": [r for r in rows if not r["left"]],
            "left_total": sum(r["left"] for r in todo),
            "next_queue": todo[0]["queue"] if todo else None,
        },
    )


@login_required
def inbox_next(request: HttpRequest) -> HttpResponse:
    """The next item from any of the user's queues: the annotation page of the first queue
    with items left, else the inbox (which says there is nothing left)."""
    todo = [r for r in inbox_queues(user=request.user) if r["left"]]
    if not todo:
        return redirect("annotate:inbox")
    return redirect("annotate:next", todo[0]["queue"].pk)
