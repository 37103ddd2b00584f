from django.urls import path

from traces import project_views, upload_manage_views, views
from traces.otlp_receiver import views as otlp_views

app_name = "traces"

urlpatterns = [
    path("", views.home, name="home"),
    path("projects/new/", project_views.project_new, name="project-new"),
    path("projects/<int:pk>/members/", project_views.members, name="members"),
    path(
        "projects/<int:pk>/members/<int:member_id>/role/",
        project_views.member_role,
        name="member-role",
    ),
    path(
        "projects/<int:pk>/members/<int:member_id>/remove/",
        project_views.member_delete,
        name="member-remove",
    ),
    path("projects/<int:pk>/tokens/", views.token_create, name="token-create"),
    path("projects/<int:pk>/sandbox/", views.project_sandbox, name="project-sandbox"),
    path(
        "projects/<int:pk>/tokens/<int:token_id>/revoke/", views.token_revoke, name="token-revoke"
    ),
    path("projects/<int:pk>/upload/", views.upload_new, name="upload-new"),
    path("uploads/<int:pk>/", views.upload_detail, name="upload"),
    path("uploads/<int:pk>/errors/", views.upload_errors, name="upload-errors"),
    path("uploads/<int:pk>/raw/", views.upload_raw, name="upload-raw"),
    path("uploads/<int:pk>/dismiss/", views.upload_dismiss, name="upload-dismiss"),
    path("uploads/<int:pk>/retry/", views.upload_retry_view, name="upload-retry"),
    # OTLP/HTTP's standard path, where exporters send spans (OTEL_EXPORTER_OTLP_ENDPOINT).
    path("v1/traces", otlp_views.traces, name="otlp-traces"),
    path("uploads/<int:pk>/rename/", upload_manage_views.upload_rename_view, name="upload-rename"),
    path(
        "uploads/<int:pk>/reprocess/",
        upload_manage_views.upload_reprocess_view,
        name="upload-reprocess",
    ),
    path("uploads/<int:pk>/delete/", upload_manage_views.upload_delete_view, name="upload-delete"),
    path("docs/format/", views.format_docs, name="format-docs"),
    path("schema/trace-v1.json", views.format_schema, name="schema-v1"),
]
