"""What a member keeps of the traces list: saved views (filters, sort and columns under a name,
their own or shared with the project) and the columns they chose last."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from traces.models import Project

__all__ = ["ListColumns", "SavedView"]


class SavedView(models.Model):
    """`query` is the list's cleaned query string (filters, sort, `cols`), so applying a view is
    opening the list at that query: the URL round-trips."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="saved_views")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_views"
    )
    name = models.CharField(max_length=80)
    query = models.TextField(blank=True)
    shared = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "owner", "name"], name="savedview_unique_name"
            )
        ]
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class ListColumns(models.Model):
    """The columns a member last chose for a project's traces list."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    columns = models.JSONField(default=list)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="listcolumns_unique")
        ]

    def __str__(self) -> str:
        return ",".join(self.columns)
