"""The project's Model endpoints page (owners only): the list, a form to add one, each
endpoint's edit form and its removal. A key typed here is stored encrypted and never shown
again: the page says only whether one is set (and its last four characters)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from auditor.llm.endpoints import EndpointRejected, endpoint_list, endpoint_save, is_owner
from auditor.llm.models import ModelEndpoint
from traces import selectors as trace_selectors
from traces.models import Project

FORM_FIELDS = ("name", "base_url", "model", "key", "key_env")


def _owned_project(request: HttpRequest, pk: int) -> Project:
    project = trace_selectors.project_get(user=request.user, project_id=pk)  # 404 for outsiders
    if not is_owner(user=request.user, project=project):
        raise PermissionDenied("only the project's owners see and change its model endpoints")
    return project


def _values(request: HttpRequest) -> dict[str, object]:
    values: dict[str, object] = {
        k: request.POST[k] for k in FORM_FIELDS if k in request.POST and request.POST[k] != ""
    }
    if request.POST.get("clear_key"):
        values["clear_key"] = True
    for old in ("api_key", "api_key_env", "api_key_file"):
        if old in request.POST:
            values[old] = request.POST[old]
    return values


@login_required
def endpoints_page(request: HttpRequest, pk: int) -> HttpResponse:
    project = _owned_project(request, pk)
    error = None
    if request.method == "POST":
        try:
            ep = endpoint_save(project=project, values=_values(request), user=request.user)
        except EndpointRejected as exc:
            error = str(exc)
        else:
            messages.info(request, f"Model endpoint {ep.name} saved.")
            return redirect(reverse("auditor:model-endpoints", args=[project.pk]))
    return _render(request, project, None, error)


@login_required
def endpoint_page(request: HttpRequest, pk: int, eid: int) -> HttpResponse:
    project = _owned_project(request, pk)
    ep = ModelEndpoint.objects.filter(project=project, pk=eid).first()
    if ep is None:
        raise Http404("no such model endpoint in this project")
    error = None
    if request.method == "POST":
        try:
            endpoint_save(project=project, values=_values(request), endpoint=ep)
        except EndpointRejected as exc:
            error = str(exc)
            ep.refresh_from_db()
        else:
            messages.info(request, f"Model endpoint {ep.name} saved.")
            return redirect(reverse("auditor:model-endpoints", args=[project.pk]))
    return _render(request, project, ep, error)


@login_required
@require_POST
def endpoint_delete(request: HttpRequest, pk: int, eid: int) -> HttpResponse:
    project = _owned_project(request, pk)
    deleted, _ = ModelEndpoint.objects.filter(project=project, pk=eid).delete()
    if not deleted:
        raise Http404("no such model endpoint in this project")
    messages.info(request, "Model endpoint removed.")
    return redirect(reverse("auditor:model-endpoints", args=[project.pk]))


def _render(
    request: HttpRequest, project: Project, ep: ModelEndpoint | None, error: str | None
) -> HttpResponse:
    from django.conf import settings

    # What was typed is kept on an error, except the key: it is never sent back to a browser.
    form = {k: v for k, v in request.POST.items() if k in FORM_FIELDS and k != "key"}
    return render(
        request,
        "auditor/model_endpoints.html",
        {
            "project": project,
            "endpoints": list(endpoint_list(project=project)),
            "editing": ep,
            "form": form if request.method == "POST" else {},
            "error": error,
            "key_envs": list(settings.TA_MODEL_KEY_ENVS),
        },
        status=400 if error else 200,
    )
