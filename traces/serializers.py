from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from traces.models import Event, Trace, Upload


class UploadSerializer(serializers.ModelSerializer):
    # What the upload's page says: "failed" when the file finished but every trace or line of it
    # was rejected (nothing was stored), so a client polling for "done" never takes an empty
    # upload for a success. `shown_status` adds the page's "done with errors".
    status = serializers.SerializerMethodField()
    shown_status = serializers.CharField(read_only=True)
    status_url = serializers.SerializerMethodField()
    page_url = serializers.SerializerMethodField()
    project = serializers.CharField(source="project.name")

    class Meta:
        model = Upload
        fields = [
            "id",
            "project",
            "filename",
            "size",
            "content_hash",
            "format_requested",
            "format_detected",
            "source",
            "run_model",
            "run_agent",
            "run_benchmark",
            "run_label",
            "run_stated",
            "with_annotations",
            "status",
            "shown_status",
            "progress",
            "attempts",
            "traces_accepted",
            "traces_rejected",
            "events",
            "error_count",
            "errors",
            "warnings",
            "failure",
            "report",
            "created_at",
            "started_at",
            "finished_at",
            "status_url",
            "page_url",
        ]
        read_only_fields = fields

    def get_status(self, obj: Upload) -> str:
        return Upload.Status.FAILED.value if obj.rejected_all else str(obj.status)

    def get_status_url(self, obj: Upload) -> str:
        return self._abs(reverse("api:upload-detail", args=[obj.pk]))

    def get_page_url(self, obj: Upload) -> str:
        return self._abs(obj.get_absolute_url())

    def _abs(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


class UploadCreatedSerializer(UploadSerializer):
    duplicate = serializers.BooleanField()

    class Meta(UploadSerializer.Meta):
        fields = [*UploadSerializer.Meta.fields, "duplicate"]
        read_only_fields = fields


class UploadFormSerializer(serializers.Serializer):
    """The multipart form of POST /api/uploads/ (a raw JSONL or gzip body works too)."""

    file = serializers.FileField()
    format = serializers.CharField(required=False, default="auto")
    project = serializers.CharField(required=False, help_text="project name (session users)")
    run_model = serializers.CharField(required=False, default="", allow_blank=True)
    run_agent = serializers.CharField(required=False, default="", allow_blank=True)
    run_benchmark = serializers.CharField(required=False, default="", allow_blank=True)
    run_label = serializers.CharField(required=False, default="", allow_blank=True)
    with_annotations = serializers.BooleanField(required=False, default=False)


class UploadChangeSerializer(serializers.Serializer):
    """PATCH /api/uploads/<id>/ (rename the run) and POST …/reprocess/ (with a `format`)."""

    format = serializers.CharField(required=False)
    run_model = serializers.CharField(required=False, default="", allow_blank=True)
    run_agent = serializers.CharField(required=False, default="", allow_blank=True)
    run_benchmark = serializers.CharField(required=False, default="", allow_blank=True)
    run_label = serializers.CharField(required=False, default="", allow_blank=True)


class TraceSerializer(serializers.ModelSerializer):
    trace_id = serializers.CharField(source="external_id")

    class Meta:
        model = Trace
        fields = [
            "id",
            "trace_id",
            "upload",
            "agent",
            "model",
            "benchmark",
            "category",
            "task_id",
            "run_label",
            "run_source",
            "outcome_success",
            "outcome_reward",
            "event_count",
            "started_at",
            "duration_ms",
            "input_tokens",
            "output_tokens",
            "total_tokens",
            "cost_usd",
            "header",
            "created_at",
        ]
        read_only_fields = fields


class EventSerializer(serializers.ModelSerializer):
    class Meta:
        model = Event
        fields = ["seq", "type", "turn", "role", "name", "call_id", "status", "line", "payload"]
        read_only_fields = fields
