from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from traces import views as trace_views

urlpatterns = [
    path("", include("traces.urls")),
    path("", include("auditor.audit_urls")),
    path("", include("auditor.annotate_urls")),
    path("", include("auditor.export_urls")),
    path("api/", include("traces.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/format/", trace_views.format_docs, name="format-docs"),
    path("schema/trace-v1.json", trace_views.format_schema, name="trace-schema-v1"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
