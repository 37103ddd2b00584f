"""REST API of ingestion and traces. Thin: parse, call a service or selector, render."""

from __future__ import annotations

import tempfile

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.request_input import FormParser, MultiPartParser
from traces import selectors
from traces.models import Project, ProjectToken, Upload
from traces.run_source import RunSource
from traces.serializers import (
    EventSerializer,
    TraceSerializer,
    UploadChangeSerializer,
    UploadCreatedSerializer,
    UploadFormSerializer,
    UploadSerializer,
)
from traces.services import FORMATS, UploadRejected, upload_create, upload_size_check
from traces.upload_handlers import upload_too_large
from traces.upload_manage import upload_delete, upload_dependents, upload_rename, upload_reprocess

RAW_TYPES = (
    "application/x-ndjson",
    "application/jsonl",
    "application/json",
    "application/gzip",
    "application/x-gzip",
    "application/octet-stream",
    "text/plain",
)


class RawBodyParser(BaseParser):
    """Declares the raw-body content types for the schema; the view streams the body itself."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):  # type: ignore[no-untyped-def]
        return {}


def _read_raw_body(request: Request) -> tempfile.SpooledTemporaryFile:
    """Stream the request body to a spooled temp file, refusing early when it is too big."""
    declared = request.META.get("CONTENT_LENGTH")
    if declared and declared.isdigit():
        upload_size_check(int(declared))
    spool = tempfile.SpooledTemporaryFile(max_size=8 << 20)
    size = 0
    raw = request._request  # the Django request: read the body as a stream, not into memory
    meta = raw.META
    if not declared and meta.get("wsgi.input_terminated"):
        # Chunked (no Content-Length): Django reads no body it has no length for, but the
        # server (gunicorn) ends wsgi.input at the last chunk. The size check still applies.
        raw = meta["wsgi.input"]
    while chunk := raw.read(1 << 20):
        size += len(chunk)
        upload_size_check(size)
        spool.write(chunk)
    spool.seek(0)
    return spool


def _target_project(request: Request, name: str | None) -> Project:
    user = request.user
    if getattr(user, "project", None) is not None:
        if name and name != user.project.name:
            raise PermissionDenied("this token belongs to another project")
        return user.project
    if not name:
        raise ValidationError({"project": "name the project (a form field or ?project=)"})
    project = selectors.project_list(user=user).filter(name=name).first()
    if project is None:
        raise NotFound(f"no project named {name!r} that you are a member of")
    if not selectors.can_write(user=user, project=project):
        raise PermissionDenied("viewers cannot upload")
    return project


# What an upload may state about its run (form fields or query parameters `run_<part>`).
RUN_PARTS = ("model", "agent", "benchmark", "label")


class UploadListCreate(APIView):
    parser_classes = [MultiPartParser, FormParser, RawBodyParser]
    token_scope = ProjectToken.Scope.UPLOAD  # an agent's upload-only token sends and lists

    @extend_schema(
        summary="Upload a trace file",
        description=(
            "multipart/form-data with a `file` field, or the raw file as the body (JSONL, or "
            "gzip-compressed JSONL) with `?filename=` and `?format=`. Answers 202 with the "
            "upload's status URL; the same file already in the project with the same format and "
            "run answers 200 with `duplicate: true` and changes nothing (under another run "
            "name or format it is a new upload)."
        ),
        parameters=[
            OpenApiParameter("format", str, enum=list(FORMATS), required=False),
            OpenApiParameter("filename", str, required=False),
            OpenApiParameter("project", str, required=False),
            *(OpenApiParameter(f"run_{k}", str, required=False) for k in RUN_PARTS),
            OpenApiParameter("with_annotations", bool, required=False),
        ],
        request={
            "multipart/form-data": UploadFormSerializer,
            "application/x-ndjson": {"type": "string", "format": "binary"},
            "application/gzip": {"type": "string", "format": "binary"},
        },
        responses={
            202: UploadCreatedSerializer,
            200: UploadCreatedSerializer,
            400: OpenApiResponse(description="bad format or empty file"),
            413: OpenApiResponse(description="file over the size limit"),
        },
    )
    def post(self, request: Request) -> Response:
        content_type = (request.content_type or "").split(";")[0].strip().lower()
        if content_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
            data = request.data
            if upload_too_large(request._request):  # stopped at the limit while streaming
                upload_size_check(settings.TA_MAX_UPLOAD_BYTES + 1)
            form = UploadFormSerializer(data=data)
            form.is_valid(raise_exception=True)
            fileobj = form.validated_data["file"]
            filename = fileobj.name
            fmt = form.validated_data["format"]
            project_name = form.validated_data.get("project") or request.query_params.get("project")
            given = form.validated_data
            with_annotations = form.validated_data["with_annotations"]
        else:
            fileobj = _read_raw_body(request)
            filename = request.query_params.get("filename") or "upload.jsonl"
            fmt = request.query_params.get("format", "auto")
            project_name = request.query_params.get("project")
            given = request.query_params
            with_annotations = request.query_params.get("with_annotations") in ("1", "true")
        project = _target_project(request, project_name)
        run = RunSource(**{k: given.get(f"run_{k}") or "" for k in RUN_PARTS})
        upload, created = upload_create(
            project=project,
            fileobj=fileobj,
            filename=filename,
            fmt=fmt,
            source=Upload.Source.API,
            user=request.user,
            run=run,
            with_annotations=with_annotations,
        )
        upload.duplicate = not created  # type: ignore[attr-defined]
        body = UploadCreatedSerializer(upload, context={"request": request}).data
        headers = {"Location": body["status_url"]}
        return Response(
            body,
            status=status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK,
            headers=headers,
        )

    @extend_schema(summary="List uploads", responses=UploadSerializer(many=True))
    def get(self, request: Request) -> Response:
        uploads = selectors.upload_list(user=request.user)[:200]
        return Response(UploadSerializer(uploads, many=True, context={"request": request}).data)


class UploadDetail(APIView):
    token_scope = ProjectToken.Scope.UPLOAD  # the status URL an upload answers with

    @extend_schema(summary="Upload status, counts and errors", responses=UploadSerializer)
    def get(self, request: Request, pk: int) -> Response:
        upload = selectors.upload_get(user=request.user, upload_id=pk)
        return Response(UploadSerializer(upload, context={"request": request}).data)

    @extend_schema(
        summary="Rename the upload's run (owners); its traces follow",
        request=UploadChangeSerializer,
        responses={200: UploadSerializer, 403: None, 409: None},
    )
    def patch(self, request: Request, pk: int) -> Response:
        upload = _owned(request, pk)
        form = UploadChangeSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        upload = _changed(upload_rename, upload=upload, run=_run(form.validated_data))
        return Response(UploadSerializer(upload, context={"request": request}).data)

    @extend_schema(
        summary="Delete the upload with its traces, results and annotations (owners)",
        parameters=[OpenApiParameter("confirm", bool, required=False)],
        responses={200: None, 400: None, 403: None},
    )
    def delete(self, request: Request, pk: int) -> Response:
        """Without `?confirm=true`: 400 naming what would go, nothing deleted."""
        upload = _owned(request, pk)
        if request.query_params.get("confirm") not in ("1", "true"):
            goes = dict(upload_dependents(upload))
            what = ", ".join(f"{n} {name}" for name, n in goes.items()) or "no traces"
            return Response(
                {
                    "detail": f"deleting upload #{pk} also deletes {what}; repeat with "
                    "?confirm=true",
                    "would_delete": goes,
                },
                status=status.HTTP_400_BAD_REQUEST,
            )
        gone = _changed(upload_delete, upload=upload)
        return Response({"deleted": pk, "with": dict(gone)})


def _owned(request: Request, pk: int) -> Upload:
    upload = selectors.upload_get(user=request.user, upload_id=pk)
    if selectors.role_of(user=request.user, project=upload.project) != "owner":
        raise PermissionDenied("only the project's owners change or delete uploads")
    return upload


def _run(data: dict) -> RunSource:
    return RunSource(**{k: data.get(f"run_{k}") or "" for k in RUN_PARTS})


def _changed(action, **kwargs):  # type: ignore[no-untyped-def]
    """Run an upload change; a refusal answers with its status and reason."""
    try:
        return action(**kwargs)
    except UploadRejected as exc:
        raise _Refused(str(exc), exc.status) from exc


class _Refused(ValidationError):
    def __init__(self, detail: str, code: int) -> None:
        super().__init__({"detail": detail})
        self.status_code = code


class UploadReprocess(APIView):
    token_scope = ProjectToken.Scope.WRITE

    @extend_schema(
        summary="Process the upload again, with another format or run (owners)",
        request=UploadChangeSerializer,
        responses={202: UploadSerializer, 403: None, 409: None},
    )
    def post(self, request: Request, pk: int) -> Response:
        upload = _owned(request, pk)
        form = UploadChangeSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        given = {k for k in request.data if k.startswith("run_")}
        run = _run(form.validated_data) if given else None
        upload = _changed(
            upload_reprocess, upload=upload, fmt=form.validated_data.get("format"), run=run
        )
        return Response(
            UploadSerializer(upload, context={"request": request}).data,
            status=status.HTTP_202_ACCEPTED,
        )


class TraceList(generics.ListAPIView):
    serializer_class = TraceSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        qs = selectors.trace_list(user=self.request.user).order_by("id")
        for field in ("agent", "model", "benchmark", "category", "task_id", "run_label"):
            value = self.request.query_params.get(field)
            if value:
                qs = qs.filter(**{field: value})
        return qs[:500]


class TraceDetail(generics.RetrieveAPIView):
    serializer_class = TraceSerializer

    def get_object(self):  # type: ignore[no-untyped-def]
        return selectors.trace_get(user=self.request.user, trace_id=self.kwargs["pk"])


class EventList(generics.ListAPIView):
    serializer_class = EventSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        trace = selectors.trace_get(user=self.request.user, trace_id=self.kwargs["pk"])
        return selectors.event_list(trace=trace)


__all__ = [
    "UploadListCreate",
    "UploadDetail",
    "UploadReprocess",
    "TraceList",
    "TraceDetail",
    "EventList",
    "serializers",
]
