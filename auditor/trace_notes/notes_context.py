"""What the trace page's notes section shows a member: the trace's tags, its comments (not to
annotators, see access.py) and which forms they may use."""

from __future__ import annotations

from typing import Any

from auditor.trace_notes import access, selectors
from traces import selectors as trace_selectors
from traces.models import Trace

_ASK = object()


def notes_context(  # type: ignore[no-untyped-def]
    *, user, trace: Trace, share_url: str, error: str = "", role: Any = _ASK
) -> dict[str, Any]:
    """`role`: the user's role in the trace's project, when the caller knows it already."""
    if role is _ASK:
        role = trace_selectors.role_of(user=user, project=trace.project)
    read_comments = access.can_read_comments(role)
    return {
        "trace": trace,
        "project": trace.project,
        "notes_role": role,
        "note_error": error,
        "share_url": share_url,
        "tags": selectors.tags_of([trace.pk]).get(trace.pk, []),
        "can_tag": access.can_write_tags(role),
        "comments": selectors.comments_of(trace) if read_comments else [],
        "comments_hidden": not read_comments,
        "can_comment": access.can_write_comments(role),
        "why_no_comments": "" if read_comments else access.why_not(role, "see a comment"),
    }
