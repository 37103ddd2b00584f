"""The root URLconf with the export routes, for tests that run before auditor/urls.py includes
them (once it does, this is the root URLconf unchanged)."""

from django.urls import include, path

from auditor.urls import urlpatterns as root

_wired = any(getattr(p, "namespace", None) == "exports" for p in root)
urlpatterns = root if _wired else [*root, path("", include("auditor.exports.urls"))]
