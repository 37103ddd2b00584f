from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

urlpatterns = [
    path("", include("traces.urls")),
    path("", include("auditor.audit_urls")),
    path("", include("auditor.annotate_urls")),
    path("", include("auditor.export_urls")),
    path("api/", include("traces.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
