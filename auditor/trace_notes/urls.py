"""Routes of tags and comments: the trace page's forms and the API (namespace "auditor", see
auditor/urls.py)."""

from django.urls import path

from auditor.trace_notes import api, views

urlpatterns = [
    path("traces/<int:pk>/tags/", views.tag_add, name="tag-add"),
    path("traces/<int:pk>/tags/remove/", views.tag_remove, name="tag-remove"),
    path("traces/<int:pk>/comments/", views.comment_add, name="comment-add"),
    path(
        "traces/<int:pk>/comments/<int:comment_id>/",
        views.comment_change,
        name="comment-change",
    ),
    path("api/traces/<int:pk>/tags/", api.TagList.as_view(), name="api-tags"),
    path("api/traces/<int:pk>/tags/<str:name>/", api.TagDetail.as_view(), name="api-tag"),
    path("api/traces/<int:pk>/comments/", api.CommentList.as_view(), name="api-comments"),
    path(
        "api/traces/<int:pk>/comments/<int:comment_id>/",
        api.CommentDetail.as_view(),
        name="api-comment",
    ),
]
