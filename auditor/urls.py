"""The root URLconf. Runs, the traces list and the trace page share the namespace "auditor" (one
include: two includes may not share a namespace, Django check urls.W005); annotation and exports
have their own."""

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from auditor.llm import urls as llm_urls
from auditor.login import ThrottledLoginView
from auditor.runs import urls as runs_urls
from auditor.trace_list import urls as trace_list_urls
from auditor.trace_notes import urls as trace_notes_urls
from auditor.trace_page import urls as trace_page_urls

auditor_patterns = [
    *runs_urls.urlpatterns,
    *trace_list_urls.urlpatterns,
    *trace_page_urls.urlpatterns,
    *trace_notes_urls.urlpatterns,
    *llm_urls.urlpatterns,
]

urlpatterns = [
    path("", include("traces.urls")),
    path("", include((auditor_patterns, "auditor"))),
    path("", include("auditor.annotation.urls")),
    path("", include("auditor.exports.urls")),
    path("api/", include("traces.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The admin's log-in, with the same failure limits (it is the most valuable account).
    path(
        "admin/login/",
        ThrottledLoginView.as_view(
            authentication_form=AdminAuthenticationForm,
            template_name="admin/login.html",
            extra_context={
                "site_header": admin.site.site_header,
                "site_title": admin.site.site_title,
                "title": "Log in",
                "app_path": "/admin/login/",
            },
        ),
        name="admin-login",
    ),
    path("admin/", admin.site.urls),
]
