"""Dataset exports: immutable snapshots with a manifest (SPEC §6 "Export").

An export is asked for (filters + format), built once by a worker into a file kept through
Django's storage API, and never changed afterwards: rebuilding is a new export. The builder
is `auditor.exports.services.export_build`.
"""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import models
from django.urls import reverse

from common.jobs import Job

__all__ = ["Export"]


class Export(Job):
    """One snapshot of a project's traces, decisions and annotations in one format."""

    class Format(models.TextChoices):
        JSONL = "jsonl", "JSONL (one line per trace: v1 events, decisions, annotations)"
        CSV = "csv", "CSV (one row per decision)"
        PARQUET = "parquet", "Parquet (one row per decision)"

    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="exports")
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    filters = models.JSONField(default=dict, blank=True, help_text="as resolved at creation")
    format = models.CharField(max_length=10, choices=Format.choices)
    file = models.FileField(upload_to="exports/%Y/%m/%d/", max_length=300, blank=True)
    manifest = models.JSONField(default=dict, blank=True)
    rows = models.PositiveBigIntegerField(default=0, help_text="lines (JSONL) or rows")
    bytes = models.PositiveBigIntegerField(default=0)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0, help_text="builds claimed; see the builder")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "-created_at"], name="export_project_recent")]

    def __str__(self) -> str:
        return f"export #{self.pk} ({self.format}, {self.status})"

    def save(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        # Immutability: see from_db below; the builder writes with conditional update()s.
        if getattr(self, "_loaded_status", None) == self.Status.DONE:
            raise ValueError("a built export is immutable; create a new export to rebuild")
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        return reverse("exports:detail", args=[self.pk])

    # --- immutability -------------------------------------------------------------------
    # A built snapshot is never changed through the ORM: the builder writes with conditional
    # `update()`s (see auditor.exports), and `save()` on an instance loaded as done refuses.
    @classmethod
    def from_db(cls, db, field_names, values, **kwargs):  # type: ignore[no-untyped-def]
        instance = super().from_db(db, field_names, values, **kwargs)
        instance._loaded_status = instance.__dict__.get("status")
        return instance

    @property
    def download_url(self) -> str:
        return reverse("exports:download", args=[self.pk])

    @property
    def filename(self) -> str:
        """The name a download is saved under."""
        return f"{self.project.name}-export-{self.pk}.{self.format}"
