"""REST API of a trace's tags and comments, under the same scoping as the trace itself (an
outsider gets 404) and the same roles as the trace page (access.py); a project token reads
both and, with the write scope, tags and untags."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from auditor.trace_notes import access, selectors, services
from auditor.trace_notes.models import TraceComment
from auditor.trace_notes.services import NoteForbidden, NoteRejected
from traces import selectors as trace_selectors


class TagSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)


class CommentInSerializer(serializers.Serializer):
    body = serializers.CharField(max_length=20_000, trim_whitespace=False)


class CommentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    author = serializers.CharField(allow_null=True)
    body = serializers.CharField()
    created_at = serializers.CharField()
    edited_at = serializers.CharField(allow_null=True)


def _person(user):  # type: ignore[no-untyped-def]
    """The user to record as author, or None for a project token."""
    return None if getattr(user, "project", None) is not None else user


class _TraceNotes(APIView):
    def trace_role(self, request: Request, pk: int):  # type: ignore[no-untyped-def]
        trace = trace_selectors.trace_get(user=request.user, trace_id=pk)
        return trace, trace_selectors.role_of(user=request.user, project=trace.project)

    @staticmethod
    def tags(trace) -> Response:  # type: ignore[no-untyped-def]
        return Response({"tags": selectors.tags_of([trace.pk]).get(trace.pk, [])})


class TagList(_TraceNotes):
    @extend_schema(summary="A trace's tags", responses={200: None})
    def get(self, request: Request, pk: int) -> Response:
        trace, _ = self.trace_role(request, pk)
        return self.tags(trace)

    @extend_schema(summary="Tag a trace", request=TagSerializer, responses={201: None})
    def post(self, request: Request, pk: int) -> Response:
        trace, role = self.trace_role(request, pk)
        if not access.can_write_tags(role):
            raise PermissionDenied(access.why_not(role, "tag traces"))
        data = TagSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.tag_add(
                trace=trace, name=data.validated_data["name"], user=_person(request.user)
            )
        except NoteRejected as exc:
            raise ValidationError({"name": str(exc)}) from None
        response = self.tags(trace)
        response.status_code = status.HTTP_201_CREATED
        return response


class TagDetail(_TraceNotes):
    @extend_schema(summary="Remove a tag from a trace", responses={200: None})
    def delete(self, request: Request, pk: int, name: str) -> Response:
        trace, role = self.trace_role(request, pk)
        if not access.can_write_tags(role):
            raise PermissionDenied(access.why_not(role, "remove tags"))
        try:
            services.tag_remove(trace=trace, name=name)
        except NoteRejected as exc:
            raise NotFound(str(exc)) from None
        return self.tags(trace)


def _comment_out(c: TraceComment) -> dict:
    return selectors.comment_dict(
        {
            "id": c.pk,
            "author__username": c.author.get_username() if c.author else None,
            "body": c.body,
            "created_at": c.created_at,
            "edited_at": c.edited_at,
        }
    )


class CommentList(_TraceNotes):
    @extend_schema(summary="A trace's comments", responses={200: CommentSerializer(many=True)})
    def get(self, request: Request, pk: int) -> Response:
        trace, role = self.trace_role(request, pk)
        if not access.can_read_comments(role):
            raise PermissionDenied(access.why_not(role, "see a comment"))
        return Response([_comment_out(c) for c in selectors.comments_of(trace)])

    @extend_schema(
        summary="Comment on a trace",
        request=CommentInSerializer,
        responses={201: CommentSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        trace, role = self.trace_role(request, pk)
        if not access.can_write_comments(role):
            raise PermissionDenied(access.why_not(role, "comment"))
        data = CommentInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            c = services.comment_add(
                trace=trace, body=data.validated_data["body"], user=request.user
            )
        except NoteRejected as exc:
            raise ValidationError({"body": str(exc)}) from None
        return Response(_comment_out(c), status=status.HTTP_201_CREATED)


class CommentDetail(_TraceNotes):
    def comment(self, request: Request, pk: int, comment_id: int):  # type: ignore[no-untyped-def]
        trace, role = self.trace_role(request, pk)
        if not access.can_read_comments(role):
            raise NotFound("no such comment")
        c = TraceComment.objects.filter(trace=trace, pk=comment_id).select_related("author").first()
        if c is None:
            raise NotFound("no such comment")
        if not access.can_write_comments(role):
            raise PermissionDenied(access.why_not(role, "change a comment"))
        return c, role

    @extend_schema(
        summary="Edit your comment", request=CommentInSerializer, responses={200: CommentSerializer}
    )
    def patch(self, request: Request, pk: int, comment_id: int) -> Response:
        c, _ = self.comment(request, pk, comment_id)
        data = CommentInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.comment_edit(comment=c, body=data.validated_data["body"], user=request.user)
        except NoteForbidden as exc:
            raise PermissionDenied(str(exc)) from None
        except NoteRejected as exc:
            raise ValidationError({"body": str(exc)}) from None
        return Response(_comment_out(c))

    @extend_schema(summary="Delete a comment (yours, or any as an owner)", responses={204: None})
    def delete(self, request: Request, pk: int, comment_id: int) -> Response:
        c, role = self.comment(request, pk, comment_id)
        try:
            services.comment_delete(comment=c, user=request.user, role=role)
        except NoteRejected as exc:
            raise PermissionDenied(str(exc)) from None
        return Response(status=status.HTTP_204_NO_CONTENT)
