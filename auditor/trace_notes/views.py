"""The trace page's notes: add or remove a tag, add, edit or delete a comment. Plain form POSTs
that answer with the notes section (htmx) or a redirect back to the trace page (without
JavaScript). A refused change is said beside the form, with status 400 or 403; never a 500."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from auditor.trace_notes import access, services
from auditor.trace_notes.models import TraceComment
from auditor.trace_notes.notes_context import notes_context
from auditor.trace_notes.services import NoteRejected
from common.rendering import vary_on_htmx, wants_fragment
from traces import selectors as trace_selectors
from traces.models import Trace


def _answer(
    request: HttpRequest, trace: Trace, *, error: str = "", status: int = 200
) -> HttpResponse:
    if wants_fragment(request):
        share = request.build_absolute_uri(trace.get_absolute_url())
        ctx = notes_context(user=request.user, trace=trace, share_url=share, error=error)
        return vary_on_htmx(render(request, "auditor/trace_notes.html", ctx, status=status))
    if error:
        messages.error(request, error)
    return vary_on_htmx(redirect(trace.get_absolute_url() + "#notes"))


def _trace_and_role(request: HttpRequest, pk: int) -> tuple[Trace, str | None]:
    trace = trace_selectors.trace_get(user=request.user, trace_id=pk)
    return trace, trace_selectors.role_of(user=request.user, project=trace.project)


@login_required
@require_POST
def tag_add(request: HttpRequest, pk: int) -> HttpResponse:
    trace, role = _trace_and_role(request, pk)
    if not access.can_write_tags(role):
        return _answer(request, trace, error=access.why_not(role, "tag traces"), status=403)
    try:
        services.tag_add(trace=trace, name=request.POST.get("name", ""), user=request.user)
    except NoteRejected as exc:
        return _answer(request, trace, error=f"Tag not added: {exc}.", status=400)
    return _answer(request, trace)


@login_required
@require_POST
def tag_remove(request: HttpRequest, pk: int) -> HttpResponse:
    trace, role = _trace_and_role(request, pk)
    if not access.can_write_tags(role):
        return _answer(request, trace, error=access.why_not(role, "remove tags"), status=403)
    try:
        services.tag_remove(trace=trace, name=request.POST.get("name", ""))
    except NoteRejected as exc:
        return _answer(request, trace, error=f"Tag not removed: {exc}.", status=400)
    return _answer(request, trace)


@login_required
@require_POST
def comment_add(request: HttpRequest, pk: int) -> HttpResponse:
    trace, role = _trace_and_role(request, pk)
    if not access.can_write_comments(role):
        return _answer(request, trace, error=access.why_not(role, "comment"), status=403)
    try:
        services.comment_add(trace=trace, body=request.POST.get("body", ""), user=request.user)
    except NoteRejected as exc:
        return _answer(request, trace, error=f"Comment not added: {exc}.", status=400)
    return _answer(request, trace)


@login_required
@require_POST
def comment_change(request: HttpRequest, pk: int, comment_id: int) -> HttpResponse:
    """Edit (`action=edit`, with `body`) or delete (`action=delete`) a comment."""
    trace, role = _trace_and_role(request, pk)
    if not access.can_read_comments(role):
        raise Http404("no such comment")
    comment = TraceComment.objects.filter(trace=trace, pk=comment_id).first()
    if comment is None:
        raise Http404("no such comment")
    if not access.can_write_comments(role):
        return _answer(request, trace, error=access.why_not(role, "change a comment"), status=403)
    action = request.POST.get("action", "")
    try:
        if action == "delete":
            services.comment_delete(comment=comment, user=request.user, role=role)
        elif action == "edit":
            services.comment_edit(
                comment=comment, body=request.POST.get("body", ""), user=request.user
            )
        else:
            raise NoteRejected(f"unknown action {action[:20]!r}; edit or delete")
    except NoteRejected as exc:
        code = 403 if isinstance(exc, services.NoteForbidden) else 400
        return _answer(request, trace, error=f"Comment not changed: {exc}.", status=code)
    return _answer(request, trace)
