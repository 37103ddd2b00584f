"""The traces list of a project (filters by audit results as well as trace fields)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from traces import selectors as trace_selectors


@login_required
def trace_list(request: HttpRequest, pk: int) -> HttpResponse:
    project = trace_selectors.project_get(user=request.user, project_id=pk)
    traces = trace_selectors.trace_list(user=request.user, project=project).order_by("-id")
    after = request.GET.get("after")
    if after and after.isdigit():  # keyset pagination: fast at any depth
        traces = traces.filter(id__lt=int(after))
    page = list(traces[:50])
    ctx = {
        "project": project,
        "traces": page,
        "next_after": page[-1].pk if len(page) == 50 else None,
    }
    return render(request, "auditor/trace_list.html", ctx)
