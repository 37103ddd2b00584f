"""Routes of audit runs and the project dashboard (namespace "auditor", see auditor/urls.py)."""

from django.urls import path

from auditor.runs import api, views

urlpatterns = [
    path("projects/<int:pk>/", views.project_dashboard, name="project"),
    path("projects/<int:pk>/audits/new/", views.run_new, name="run-new"),
    path("audits/compare/", views.run_compare, name="run-compare"),
    path("audits/<int:pk>/", views.run_detail, name="run"),
    path("audits/<int:pk>/retry/", views.run_retry, name="run-retry"),
    path("audits/<int:pk>/matrix/", views.run_matrix, name="run-matrix"),
    path("api/audits/", api.RunCreate.as_view(), name="api-runs"),
    path("api/audits/<int:pk>/", api.RunDetail.as_view(), name="api-run"),
]
