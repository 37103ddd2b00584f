"""A tag or a comment a member put on a trace. Both name their project too, so the tags of a
project (the list's tag filter) and the scoping of every query need no join through traces."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from traces.models import Project, Trace

__all__ = ["TraceComment", "TraceTag"]


class TraceTag(models.Model):
    """A short label on a trace. `key` is the name case-folded: a trace carries a tag once
    whatever its case, and the list's tag filter matches any case."""

    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="tags")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="trace_tags")
    name = models.CharField(max_length=40)
    key = models.CharField(max_length=40)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace", "key"], name="tracetag_unique")]
        # The list's tag filter: the traces of a project with a tag, in one index range.
        indexes = [models.Index(fields=["project", "key", "trace"], name="tracetag_project_key")]
        ordering = ["key"]

    def __str__(self) -> str:
        return self.name


class TraceComment(models.Model):
    """Plain text (no markup: shown escaped, line breaks kept). Its author edits or deletes it;
    a project owner may delete any."""

    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="comments")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="trace_comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["trace", "id"], name="tracecomment_trace")]
        ordering = ["id"]

    def __str__(self) -> str:
        return f"comment #{self.pk} on {self.trace_id}"
