"""Writes of tags and comments. Each checks what must hold whoever calls it (a tag's shape, a
comment's length, who may change a comment); the views and the API check the caller's role
first (access.py)."""

from __future__ import annotations

import re

from django.db import IntegrityError, transaction
from django.utils import timezone

from auditor.trace_notes.models import TraceComment, TraceTag
from traces.models import Trace

TAG_MAX = 40
TAGS_PER_TRACE = 30
COMMENT_MAX = 4000
# Letters, digits and a few joiners; starts with a letter or digit. No spaces: a tag is one
# word in a filter or a CSV cell.
_TAG = re.compile(r"^\w[\w.:/+-]*$", re.UNICODE)


class NoteRejected(ValueError):
    """Bad input for a tag or comment; the message is shown to the user as is."""


class NoteForbidden(NoteRejected):
    """A change of someone else's comment that the caller may not make."""


def tag_clean(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise NoteRejected("a tag needs a name")
    if len(name) > TAG_MAX:
        raise NoteRejected(f"a tag has at most {TAG_MAX} characters")
    if not _TAG.match(name):
        raise NoteRejected(
            "a tag is one word: letters, digits and . : / + - _ (no spaces), starting with a "
            "letter or digit"
        )
    return name


def tag_add(*, trace: Trace, name: str, user) -> TraceTag:  # type: ignore[no-untyped-def]
    name = tag_clean(name)
    key = name.casefold()[:TAG_MAX]
    if TraceTag.objects.filter(trace=trace, key=key).exists():
        raise NoteRejected(f"this trace is already tagged {name!r}")
    if TraceTag.objects.filter(trace=trace).count() >= TAGS_PER_TRACE:
        raise NoteRejected(f"a trace has at most {TAGS_PER_TRACE} tags; remove one first")
    try:
        with transaction.atomic():
            return TraceTag.objects.create(
                trace=trace, project_id=trace.project_id, name=name, key=key, created_by=user
            )
    except IntegrityError:  # the same tag added at the same moment by someone else
        raise NoteRejected(f"this trace is already tagged {name!r}") from None


def tag_remove(*, trace: Trace, name: str) -> None:
    key = (name or "").strip().casefold()
    deleted, _ = TraceTag.objects.filter(trace=trace, key=key).delete()
    if not deleted:
        raise NoteRejected(f"this trace has no tag {name.strip()!r}")


def _body(body: str) -> str:
    body = (body or "").replace("\r\n", "\n").strip()
    if not body:
        raise NoteRejected("a comment needs some text")
    if len(body) > COMMENT_MAX:
        raise NoteRejected(
            f"a comment has at most {COMMENT_MAX:,} characters ({len(body):,} given)"
        )
    if "\x00" in body:
        raise NoteRejected("a comment cannot hold NUL characters")
    return body


def comment_add(*, trace: Trace, body: str, user) -> TraceComment:  # type: ignore[no-untyped-def]
    return TraceComment.objects.create(
        trace=trace, project_id=trace.project_id, author=user, body=_body(body)
    )


def comment_edit(*, comment: TraceComment, body: str, user) -> TraceComment:  # type: ignore[no-untyped-def]
    if comment.author_id != user.pk:
        raise NoteForbidden("only its author edits a comment")
    comment.body = _body(body)
    comment.edited_at = timezone.now()
    comment.save(update_fields=["body", "edited_at"])
    return comment


def comment_delete(*, comment: TraceComment, user, role: str | None) -> None:  # type: ignore[no-untyped-def]
    if comment.author_id != user.pk and role != "owner":
        raise NoteForbidden("only its author or a project owner deletes a comment")
    comment.delete()
