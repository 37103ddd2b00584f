"""Pages of projects and members: a new project, the members page (every member reads it; only
owners change it). An outsider gets 404 from `project_get`; a member who is not an owner gets 403
on a change."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from traces import selectors
from traces.models import Membership, Project
from traces.projects import (
    ROLES,
    MembershipRejected,
    member_add,
    member_remove,
    member_set_role,
    project_create,
)


@login_required
def project_new(request: HttpRequest) -> HttpResponse:
    error, name = None, ""
    if request.method == "POST":
        name = request.POST.get("name", "")
        try:
            project = project_create(name=name, user=request.user)
        except MembershipRejected as exc:
            error = str(exc)
        else:
            messages.success(request, f"Project {project.name} created; you are its owner.")
            return redirect(project)
    return render(
        request,
        "traces/project_new.html",
        {"error": error, "name": name},
        status=400 if error else 200,
    )


def _owned(request: HttpRequest, pk: int) -> Project:
    project = selectors.project_get(user=request.user, project_id=pk)
    if selectors.role_of(user=request.user, project=project) != "owner":
        raise PermissionDenied("only owners manage members")
    return project


def _membership(project: Project, member_id: int) -> Membership:
    m = (
        Membership.objects.select_related("project", "user")
        .filter(project=project, pk=member_id)
        .first()
    )
    if m is None:
        raise Http404("no such member")
    return m


def _members_url(project: Project) -> str:
    return reverse("traces:members", args=[project.pk])


@login_required
def members(request: HttpRequest, pk: int) -> HttpResponse:
    project = selectors.project_get(user=request.user, project_id=pk)
    role = selectors.role_of(user=request.user, project=project)
    error = None
    if request.method == "POST":
        project = _owned(request, pk)
        try:
            m = member_add(
                project=project,
                username=request.POST.get("username", ""),
                role=request.POST.get("role", Membership.Role.VIEWER),
            )
        except MembershipRejected as exc:
            error = str(exc)
        else:
            messages.success(request, f"{m.user.get_username()} added as {m.role}.")
            return redirect(_members_url(project))
    rows = (
        Membership.objects.filter(project=project).select_related("user").order_by("user__username")
    )
    return render(
        request,
        "traces/members.html",
        {
            "project": project,
            "role": role,
            "is_owner": role == "owner",
            "members": rows,
            "roles": ROLES,
            "error": error,
            "username": request.POST.get("username", "") if error else "",
        },
        status=400 if error else 200,
    )


@login_required
@require_POST
def member_role(request: HttpRequest, pk: int, member_id: int) -> HttpResponse:
    project = _owned(request, pk)
    m = _membership(project, member_id)
    try:
        member_set_role(membership=m, role=request.POST.get("role", ""))
    except MembershipRejected as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{m.user.get_username()} is now {m.role}.")
    return redirect(_members_url(project))


@login_required
@require_POST
def member_delete(request: HttpRequest, pk: int, member_id: int) -> HttpResponse:
    project = _owned(request, pk)
    m = _membership(project, member_id)
    try:
        member_remove(membership=m)
    except MembershipRejected as exc:
        messages.error(request, str(exc))
        return redirect(_members_url(project))
    messages.success(request, f"{m.user.get_username()} removed from {project.name}.")
    if m.user_id == request.user.pk:  # an owner who removed themselves can no longer see it
        return redirect("traces:home")
    return redirect(_members_url(project))
