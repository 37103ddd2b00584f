"""REST API of audit runs: start one (202 + status URL) with its policies, judge and model
settings, and read its status and counts (what `audit --json` prints). Members who may write
start runs; project tokens may not (they are for uploads)."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from auditor.llm.endpoints import is_owner
from auditor.llm.settings import JUDGE_ALIASES, JUDGES, model_settings_from
from auditor.runs import blindness, selectors
from auditor.runs.models import AuditRun
from auditor.runs.services import ENVIRONMENTS, AuditRejected, audit_run_create
from auditor.runs.summary import audit_run_counts
from policies import POLICIES
from traces import selectors as trace_selectors


class ModelSerializer(serializers.Serializer):
    endpoint = serializers.CharField(
        required=False, allow_blank=True, help_text="a model endpoint of the project (name or id)"
    )
    model = serializers.CharField(
        required=False, allow_blank=True, help_text="another model than the endpoint's default"
    )
    max_calls = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    max_tokens = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    uses = serializers.ListField(child=serializers.CharField(), required=False)
    options = serializers.DictField(
        required=False, help_text="any other endpoint field (timeout, offline, …; docs/models.md)"
    )


class RunCreateSerializer(serializers.Serializer):
    project = serializers.CharField(help_text="the project's name (or id)")
    policies = serializers.ListField(
        child=serializers.ChoiceField(choices=POLICIES), required=False
    )
    judge = serializers.ChoiceField(choices=[*JUDGES, *JUDGE_ALIASES], default="heuristic")
    environment = serializers.ChoiceField(choices=ENVIRONMENTS, default="auto")
    label = serializers.CharField(required=False, allow_blank=True, max_length=200)
    settings = serializers.DictField(required=False, help_text="per-policy settings")
    model = ModelSerializer(required=False)


def _project(request: Request, ref: str):  # type: ignore[no-untyped-def]
    project = trace_selectors.project_by_ref(user=request.user, ref=ref)
    if project is None:
        raise NotFound(f"no project {ref!r} that you are a member of")
    return project


# What an annotator reads of a run: its progress, none of its results (auditor.runs.blindness).
PROGRESS = ("run", "status", "traces", "errors", "judge")


def _body(request: Request, run: AuditRun) -> dict:
    url = request.build_absolute_uri(reverse("auditor:api-run", args=[run.pk]))
    counts = audit_run_counts(run)
    if not blindness.sees_decisions(user=request.user, project=run.project):
        counts = {k: counts[k] for k in PROGRESS}
    return {
        **counts,
        "model_settings": run.model_settings,
        "status_url": url,
        "page_url": request.build_absolute_uri(run.get_absolute_url()),
    }


class RunCreate(APIView):
    @extend_schema(
        summary="Start an audit run",
        description=(
            "judge: heuristic, llm (openai is its old name), human or recorded. model: one of "
            "the project's model endpoints (endpoint: its name or id; owners only), optionally "
            "another model, budget (max_calls, max_tokens), uses (judge, twin, live, claims, "
            "recheck) and options (any other endpoint field). base_url, api_key, api_key_env "
            "and api_key_file are refused (400). Answers 202 with the run's status URL."
        ),
        request=RunCreateSerializer,
        responses={
            202: OpenApiResponse(description="the run, pending"),
            400: OpenApiResponse(description="bad settings (the message names the field)"),
            403: OpenApiResponse(
                description="viewers and project tokens cannot start runs; only owners use a "
                "model endpoint"
            ),
            404: OpenApiResponse(description="no such project (or not a member)"),
        },
    )
    def post(self, request: Request) -> Response:
        raw_model = request.data.get("model") if isinstance(request.data, dict) else None
        if isinstance(raw_model, dict):
            try:  # the old design's fields: a 400 naming each, before anything else
                model_settings_from(
                    {k: v for k, v in raw_model.items() if k != "options"},
                    raw_model.get("options") if isinstance(raw_model.get("options"), dict) else {},
                )
            except ValueError as exc:
                if str(exc).startswith(("api_key", "base_url")):
                    raise ValidationError({"model": str(exc)}) from exc
        form = RunCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        project = _project(request, data["project"])
        if getattr(request.user, "project", None) is not None:
            raise PermissionDenied("project tokens upload traces; a member starts audits")
        if not trace_selectors.can_write(user=request.user, project=project):
            raise PermissionDenied("viewers cannot start audits")
        model = dict(data.get("model") or {})
        if str(model.get("endpoint") or "").strip() and not is_owner(
            user=request.user, project=project
        ):
            raise PermissionDenied("only the project's owners start audits with a model endpoint")
        try:
            model_settings = model_settings_from(
                model, model.pop("options", None), judge=data["judge"], project=project
            )
        except ValueError as exc:
            raise ValidationError({"model": str(exc)}) from exc
        try:
            run = audit_run_create(
                project=project,
                policies=data.get("policies") or list(POLICIES),
                settings=data.get("settings") or {},
                judge=data["judge"],
                model_settings=model_settings,
                environment=data["environment"],
                label=data.get("label", ""),
                user=request.user,
            )
        except AuditRejected as exc:
            raise ValidationError({exc.field: str(exc)}) from exc
        body = _body(request, run)
        return Response(
            body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["status_url"]}
        )


class RunDetail(APIView):
    @extend_schema(
        summary="Audit run status, counts, TwinCheck report and model calls",
        responses={
            200: OpenApiResponse(description="what `audit --json` prints, with status_url"),
            404: OpenApiResponse(description="no such run (or not a member of its project)"),
        },
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(_body(request, selectors.run_get(user=request.user, run_id=pk)))
