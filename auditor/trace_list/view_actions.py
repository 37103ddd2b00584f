"""The traces list's writes, each a plain form POST that answers with a redirect back to the
list: save the current state as a view, rename or share a view, delete one, remember the chosen
columns. A refused change comes back as a message above the list, never an error page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from auditor.trace_list import saved_views
from auditor.trace_list.columns import columns_param, parse_columns
from auditor.trace_list.saved_views import ViewRejected
from traces import selectors as trace_selectors


def _back(project, query: str) -> HttpResponse:  # type: ignore[no-untyped-def]
    url = reverse("auditor:trace-list", args=[project.pk])
    query = saved_views.kept_query(query)
    return redirect(f"{url}?{query}" if query else url)


@login_required
@require_POST
def view_create(request: HttpRequest, pk: int) -> HttpResponse:
    project = trace_selectors.project_get(user=request.user, project_id=pk)
    role = trace_selectors.role_of(user=request.user, project=project)
    query = request.POST.get("query", "")
    try:
        view = saved_views.view_create(
            project=project,
            user=request.user,
            role=role,
            name=request.POST.get("name", ""),
            query=query,
            shared=request.POST.get("shared") == "on",
        )
    except ViewRejected as exc:
        messages.error(request, f"The view was not saved: {exc}.")
        return _back(project, query)
    messages.success(request, f"Saved the view “{view.name}”.")
    url = reverse("auditor:trace-list", args=[project.pk])
    return redirect(f"{url}?{view.query}{'&' if view.query else ''}view={view.pk}")


@login_required
@require_POST
def view_change(request: HttpRequest, pk: int, view_id: int) -> HttpResponse:
    """Rename or share (`action=update`), or delete (`action=delete`) a view."""
    project = trace_selectors.project_get(user=request.user, project_id=pk)
    role = trace_selectors.role_of(user=request.user, project=project)
    view = saved_views.view_get(user=request.user, project=project, view_id=view_id)
    if view is None:
        raise Http404("no such saved view")
    back = request.POST.get("query", view.query)
    action = request.POST.get("action", "")
    try:
        if action == "delete":
            saved_views.view_delete(view=view, user=request.user, role=role)
            messages.success(request, f"Deleted the view “{view.name}”.")
        elif action == "update":
            saved_views.view_update(
                view=view,
                user=request.user,
                role=role,
                name=request.POST.get("name", ""),
                shared=request.POST.get("shared") == "on",
            )
            messages.success(request, f"Saved the view “{view.name}”.")
        else:
            raise ViewRejected(f"unknown action {action!r}; update or delete")
    except ViewRejected as exc:
        messages.error(request, f"The view was not changed: {exc}.")
    return _back(project, back)


@login_required
@require_POST
def columns_choose(request: HttpRequest, pk: int) -> HttpResponse:
    """Remember the checked columns for this member and project, and show the list with them."""
    project = trace_selectors.project_get(user=request.user, project_id=pk)
    query = saved_views.kept_query(request.POST.get("query", ""))
    cols = parse_columns(request.POST.getlist("col"))
    if cols is None:
        messages.error(request, "Choose at least one column.")
        return _back(project, query)
    saved_views.columns_remember(user=request.user, project=project, columns=cols)
    q = QueryDict(query, mutable=True)
    q.pop("cols", None)
    if columns_param(cols):
        q["cols"] = columns_param(cols)
    return _back(project, q.urlencode())
