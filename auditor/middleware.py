"""Project-wide response headers Django has no setting for."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


class PermissionsPolicyMiddleware:
    """Sends `Permissions-Policy` (settings.TA_PERMISSIONS_POLICY): the app uses no camera,
    microphone, location, payment or USB, so hostile trace content that slipped past the CSP
    still cannot ask for them."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.value = ", ".join(
            f"{feature}=({' '.join(allow)})"
            for feature, allow in settings.TA_PERMISSIONS_POLICY.items()
        )

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.value:
            response.headers.setdefault("Permissions-Policy", self.value)
        return response
