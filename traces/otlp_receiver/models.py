"""The span buffer: every span the receiver accepted, until its trace is imported."""

from __future__ import annotations

from django.db import models


class OtlpSpan(models.Model):
    """One span as received, in OTLP/JSON form (ids as lowercase hex), with its resource and
    instrumentation scope. (project, trace id, span id) is unique: an exporter's retry of a
    request stores nothing twice. The rows stay after import, naming the upload they went to."""

    class State(models.TextChoices):
        BUFFERED = "buffered"  # waiting for its trace to complete
        IMPORTED = "imported"  # part of the upload that made its trace
        LATE = "late"  # arrived after its trace was imported; kept, not imported

    # No index of its own: the unique (project, trace id, span id) index starts with it, and
    # every index is written again for each span received.
    project = models.ForeignKey(
        "traces.Project", on_delete=models.CASCADE, related_name="otlp_spans", db_index=False
    )
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    root = models.BooleanField(help_text="no parent span: its arrival may complete the trace")
    received_at = models.DateTimeField()
    resource = models.JSONField(default=dict)
    scope = models.JSONField(default=dict)
    span = models.JSONField()
    # Its resource, scope and span as the receiver wrote them (UTF-8 JSON text), in bytes: what
    # it counts for in the project's backlog (`backlog`), the same when it enters and leaves.
    size = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=8, choices=State.choices, default=State.BUFFERED)
    # No database-level foreign key: its deferred check ran once a span at the commit that
    # marks a trace's spans imported. The upload is created in that same transaction, and
    # deleting an upload sets its spans' upload to NULL through Django (SET_NULL).
    upload = models.ForeignKey(
        "traces.Upload",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_constraint=False,
    )

    class Meta:
        db_table = "traces_otlpspan"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "trace_id", "span_id"], name="otlpspan_unique_span"
            )
        ]
        indexes = [
            # The sweep and completion read only buffered spans, by trace.
            models.Index(
                fields=["project", "trace_id", "received_at"],
                name="otlpspan_buffered",
                condition=models.Q(state="buffered"),
            )
        ]

    def __str__(self) -> str:
        return f"span {self.span_id} of {self.trace_id} ({self.state})"


class OtlpBacklog(models.Model):
    """A project's buffered spans and their bytes (`OtlpSpan.size`), kept by the statements
    that buffer and import spans, so that the receiver checks its limits with one row read
    however many spans wait. The sweep counts them again from the buffer."""

    project = models.OneToOneField(
        "traces.Project", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    spans = models.BigIntegerField(default=0)
    bytes = models.BigIntegerField(default=0)

    class Meta:
        db_table = "traces_otlpbacklog"

    def __str__(self) -> str:
        return f"{self.spans} spans, {self.bytes} bytes waiting in project {self.project_id}"
