"""REST API of a project's model endpoints, for its owners: list and add
(``/api/projects/<project>/model-endpoints/``), read, change and remove
(``/api/model-endpoints/<id>/``). Answers never hold the key: at most whether one is set and
its last four characters. Members who are not owners get 403, everyone else 404."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from auditor.llm.endpoints import (
    EndpointRejected,
    endpoint_list,
    endpoint_public,
    endpoint_save,
    is_owner,
)
from auditor.llm.models import ModelEndpoint
from traces import selectors as trace_selectors
from traces.models import Project

FIELDS_HELP = (
    "name, base_url (http(s), a public address unless the operator allows the host), model "
    "(the default), key (stored encrypted, never shown again) or key_env (a variable the "
    "operator lists in TA_MODEL_KEY_ENVS), clear_key"
)
RESPONSES = {
    400: OpenApiResponse(description="a bad field (the message names it)"),
    403: OpenApiResponse(description="members who are not owners, project tokens"),
    404: OpenApiResponse(description="no such project or endpoint (or not a member)"),
}


def _owned(request: Request, project: Project | None, ref: str) -> Project:
    if project is None:
        raise NotFound(f"no project {ref!r} that you are a member of")
    if not is_owner(user=request.user, project=project):
        raise PermissionDenied("only the project's owners see and change its model endpoints")
    return project


def _save(request: Request, **kw: Any) -> ModelEndpoint:
    if not isinstance(request.data, dict):
        raise ValidationError({"body": "expected a JSON object"})
    try:
        return endpoint_save(values=dict(request.data), user=request.user, **kw)
    except EndpointRejected as exc:
        field = str(exc).split(":", 1)[0]
        raise ValidationError({field: str(exc)}) from exc


class EndpointList(APIView):
    @extend_schema(
        summary="A project's model endpoints (owners)", responses={200: None, **RESPONSES}
    )
    def get(self, request: Request, ref: str) -> Response:
        project = _owned(request, trace_selectors.project_by_ref(user=request.user, ref=ref), ref)
        return Response([endpoint_public(ep) for ep in endpoint_list(project=project)])

    @extend_schema(
        summary="Add a model endpoint (owners)",
        description=FIELDS_HELP,
        request=None,
        responses={201: None, **RESPONSES},
    )
    def post(self, request: Request, ref: str) -> Response:
        project = _owned(request, trace_selectors.project_by_ref(user=request.user, ref=ref), ref)
        ep = _save(request, project=project)
        return Response(endpoint_public(ep), status=status.HTTP_201_CREATED)


class EndpointDetail(APIView):
    def _get(self, request: Request, pk: int) -> ModelEndpoint:
        visible = trace_selectors.project_list(user=request.user)
        ep = ModelEndpoint.objects.filter(pk=pk, project__in=visible).first()
        if ep is None:
            raise NotFound("no such model endpoint (or not a member of its project)")
        _owned(request, ep.project, str(ep.project_id))
        return ep

    @extend_schema(summary="A model endpoint (owners)", responses={200: None, **RESPONSES})
    def get(self, request: Request, pk: int) -> Response:
        return Response(endpoint_public(self._get(request, pk)))

    @extend_schema(
        summary="Change a model endpoint (owners)",
        description=FIELDS_HELP + "; absent fields keep their value",
        request=None,
        responses={200: None, **RESPONSES},
    )
    def patch(self, request: Request, pk: int) -> Response:
        ep = self._get(request, pk)
        return Response(endpoint_public(_save(request, project=ep.project, endpoint=ep)))

    @extend_schema(summary="Remove a model endpoint (owners)", responses={204: None, **RESPONSES})
    def delete(self, request: Request, pk: int) -> Response:
        self._get(request, pk).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
