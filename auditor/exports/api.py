"""REST API of exports: ask for one (202 + status URL), read its status and manifest, download
it. People need membership of the project; a project token may read its project's exports."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from auditor.exports import selectors, services
from auditor.exports.download import download_response, refuse_annotator
from auditor.exports.models import Export
from traces import selectors as trace_selectors


class ExportFiltersSerializer(serializers.Serializer):
    runs = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), required=False
    )
    policy = serializers.ListField(child=serializers.CharField(), required=False)
    transition = serializers.ListField(child=serializers.CharField(), required=False)
    model = serializers.ListField(child=serializers.CharField(), required=False)
    benchmark = serializers.ListField(child=serializers.CharField(), required=False)
    category = serializers.ListField(child=serializers.CharField(), required=False)


class ExportCreateSerializer(serializers.Serializer):
    project = serializers.CharField(help_text="the project's name (or id)")
    format = serializers.ChoiceField(choices=Export.Format.choices)
    filters = ExportFiltersSerializer(required=False)


class ExportSerializer(serializers.ModelSerializer):
    project = serializers.CharField(source="project.name")
    status_url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()
    page_url = serializers.SerializerMethodField()

    class Meta:
        model = Export
        fields = [
            "id",
            "project",
            "format",
            "filters",
            "status",
            "rows",
            "bytes",
            "error",
            "manifest",
            "created_at",
            "started_at",
            "finished_at",
            "status_url",
            "download_url",
            "page_url",
        ]

    def _abs(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def get_status_url(self, obj: Export) -> str:
        return self._abs(reverse("exports:api-detail", args=[obj.pk]))

    def get_download_url(self, obj: Export) -> str | None:
        if obj.status != Export.Status.DONE:
            return None
        return self._abs(reverse("exports:api-download", args=[obj.pk]))

    def get_page_url(self, obj: Export) -> str:
        return self._abs(obj.get_absolute_url())


def _project(request: Request, ref: str):  # type: ignore[no-untyped-def]
    project = trace_selectors.project_by_ref(user=request.user, ref=ref)
    if project is None:
        raise NotFound(f"no project {ref!r} that you are a member of")
    return project


class ExportListCreate(APIView):
    @extend_schema(
        summary="Ask for an export",
        description=(
            "Filters (all optional, each a list): runs (audit run ids; default every finished "
            "run), policy, transition, model, benchmark, category. Answers 202 with the "
            "export's status URL; a worker builds the snapshot."
        ),
        request=ExportCreateSerializer,
        responses={
            202: ExportSerializer,
            400: OpenApiResponse(description="bad format or filter"),
            403: OpenApiResponse(
                description="project tokens may only read exports; annotators may not export"
            ),
            404: OpenApiResponse(description="no such project (or not a member)"),
        },
    )
    def post(self, request: Request) -> Response:
        form = ExportCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        project = _project(request, form.validated_data["project"])
        if getattr(request.user, "project", None) is not None:
            raise PermissionDenied("project tokens may read exports, not create them")
        refuse_annotator(request.user, project)
        try:
            export = services.export_create(
                project=project,
                format=form.validated_data["format"],
                filters=form.validated_data.get("filters") or {},
                user=request.user,
            )
        except services.ExportRejected as exc:
            raise ValidationError({"filters": str(exc)}) from exc
        body = ExportSerializer(export, context={"request": request}).data
        return Response(
            body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["status_url"]}
        )

    @extend_schema(summary="List exports", responses=ExportSerializer(many=True))
    def get(self, request: Request) -> Response:
        qs = selectors.export_list(user=request.user)
        if name := request.query_params.get("project"):
            qs = qs.filter(project__name=name.replace("\x00", ""))
        return Response(ExportSerializer(qs[:200], many=True, context={"request": request}).data)


class ExportDetail(APIView):
    @extend_schema(summary="Export status and manifest", responses=ExportSerializer)
    def get(self, request: Request, pk: int) -> Response:
        export = selectors.export_get(user=request.user, export_id=pk)
        return Response(ExportSerializer(export, context={"request": request}).data)


class ExportDownload(APIView):
    @extend_schema(
        summary="Download the snapshot",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(description="the data file"),
            403: OpenApiResponse(description="annotators may not download exports"),
            409: OpenApiResponse(description="not built (yet)"),
        },
    )
    def get(self, request: Request, pk: int):  # type: ignore[no-untyped-def]
        export = selectors.export_get(user=request.user, export_id=pk)
        refuse_annotator(request.user, export.project)
        return download_response(export)
