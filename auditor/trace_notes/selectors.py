"""Reads of tags and comments, for traces the caller already holds (scoped by the traces
selectors): the tags of a page of traces in one query, a trace's comments, a project's tags for
the list's filter, and the traces carrying a tag."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Exists, Min, OuterRef, QuerySet

from auditor.trace_notes.models import TraceComment, TraceTag
from traces.models import Project, Trace


def tags_of(trace_ids: Sequence[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    if not trace_ids:
        return out
    rows = TraceTag.objects.filter(trace_id__in=list(trace_ids)).order_by("trace_id", "key")
    for trace_id, name in rows.values_list("trace_id", "name"):
        out.setdefault(trace_id, []).append(name)
    return out


def comments_of(trace: Trace) -> list[TraceComment]:
    return list(TraceComment.objects.filter(trace=trace).select_related("author").order_by("id"))


def comments_by_trace(trace_ids: Sequence[int]) -> dict[int, list[dict]]:
    """Comments of these traces as plain dicts (exports, the API)."""
    out: dict[int, list[dict]] = {}
    if not trace_ids:
        return out
    rows = (
        TraceComment.objects.filter(trace_id__in=list(trace_ids))
        .order_by("trace_id", "id")
        .values("id", "trace_id", "author__username", "body", "created_at", "edited_at")
    )
    for r in rows:
        out.setdefault(r["trace_id"], []).append(comment_dict(r))
    return out


def comment_dict(r: dict) -> dict:
    return {
        "id": r["id"],
        "author": r["author__username"],
        "body": r["body"],
        "created_at": r["created_at"].isoformat() if r["created_at"] else None,
        "edited_at": r["edited_at"].isoformat() if r["edited_at"] else None,
    }


def project_tags(project: Project, limit: int = 300) -> list[str]:
    """The project's tags, one spelling per case-folded key, in key order."""
    rows = (
        TraceTag.objects.filter(project=project)
        .values("key")
        .annotate(spelling=Min("name"))
        .order_by("key")[:limit]
    )
    return [r["spelling"] for r in rows]


def traces_tagged(qs: QuerySet, tag: str) -> QuerySet:
    """`qs` narrowed to traces carrying `tag` (any case)."""
    key = tag.strip().casefold()
    return qs.filter(Exists(TraceTag.objects.filter(trace=OuterRef("pk"), key=key)))
