"""Routes of the traces list (namespace "auditor", see auditor/urls.py)."""

from django.urls import path

from auditor.trace_list import view_actions, views

urlpatterns = [
    path("projects/<int:pk>/traces/", views.trace_list, name="trace-list"),
    path("projects/<int:pk>/traces/views/", view_actions.view_create, name="view-create"),
    path(
        "projects/<int:pk>/traces/views/<int:view_id>/",
        view_actions.view_change,
        name="view-change",
    ),
    path("projects/<int:pk>/traces/columns/", view_actions.columns_choose, name="list-columns"),
]
