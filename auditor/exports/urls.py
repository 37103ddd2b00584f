"""Routes of exports (pages and API). Included from auditor/urls.py at the root."""

from django.urls import path

from auditor.exports import api as api_export
from auditor.exports import views as views_export

app_name = "exports"

urlpatterns = [
    path("projects/<int:pk>/exports/", views_export.export_list, name="list"),
    path("exports/<int:pk>/", views_export.export_detail, name="detail"),
    path("exports/<int:pk>/download/", views_export.export_download, name="download"),
    path("api/exports/", api_export.ExportListCreate.as_view(), name="api-list"),
    path("api/exports/<int:pk>/", api_export.ExportDetail.as_view(), name="api-detail"),
    path(
        "api/exports/<int:pk>/download/",
        api_export.ExportDownload.as_view(),
        name="api-download",
    ),
]
