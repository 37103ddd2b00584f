"""Project-wide middleware: a response header Django has no setting for, and the gate that
decides on a request body before it is read."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions

from common.request_input import BadInput, check_pairs, text_problem
from traces.api_auth import ProjectTokenAuthentication
from traces.services import UploadRejected, upload_size_check


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


# Multipart framing around the file (boundaries, part headers, the other fields).
MULTIPART_SLACK = 1024 * 1024
# An anonymous multipart body this small is a form (a log-in), not an upload: let it through.
ANONYMOUS_MULTIPART_BYTES = 64 * 1024


class BodyGateMiddleware:
    """Decides on a request body before a byte of it is read.

    - A declared length over the upload limit: 413, whoever asks.
    - A multipart body over 64 KiB, a body over DATA_UPLOAD_MAX_MEMORY_SIZE, or one of no
      declared length (chunked), from a client with neither a session nor an Authorization
      session: refused (401 for the API, the login page for the rest). Without this the CSRF
      check read — and Django spooled to disk — the whole body before login_required
      redirected. An API request's bearer token is checked here (a made-up one: 401, body
      unread); on pages, which know sessions only, an Authorization header counts for nothing.

    It runs before any view middleware (CSRF reads the body in process_view). What a valid
    token may do (its scope) the API checks before it parses the body.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in ("POST", "PUT", "PATCH"):
            refused = self._refusal(request)
            if refused is not None:
                return refused
        return self.get_response(request)

    def _refusal(self, request: HttpRequest) -> HttpResponse | None:
        raw_length = request.META.get("CONTENT_LENGTH") or ""
        length = int(raw_length) if raw_length.isdigit() else None
        if length is not None:
            try:
                upload_size_check(length - MULTIPART_SLACK)  # the framing is not the file
            except UploadRejected as exc:
                return _answer(request, exc.status, str(exc))
        multipart = request.content_type == "multipart/form-data"
        bodied = (
            (length is None and bool(request.META.get("HTTP_TRANSFER_ENCODING")))
            or (multipart and (length or 0) > ANONYMOUS_MULTIPART_BYTES)
            or (length or 0) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        )
        if not bodied or request.user.is_authenticated:
            return None
        if _is_api(request):
            # A bearer token is checked here, body unread: a made-up one is refused now.
            message = "authentication credentials were not provided"
            if "HTTP_AUTHORIZATION" in request.META:
                try:
                    if ProjectTokenAuthentication().authenticate(request) is not None:
                        return None
                    message = "the Authorization header names no project token"
                except exceptions.Throttled as exc:
                    response = _answer(request, 429, str(exc.detail))
                    response["Retry-After"] = str(int(exc.wait or 1))
                    return response
                except exceptions.AuthenticationFailed as exc:
                    message = str(exc.detail)
            response = _answer(request, 401, message)
            response["WWW-Authenticate"] = "Bearer"
            return response
        # Pages know sessions only: an Authorization header there authenticates nothing.
        return redirect_to_login(request.get_full_path())


def _is_api(request: HttpRequest) -> bool:
    # /v1/ is the OTLP receiver's: exporters authenticate by token, like API clients.
    return request.path.startswith(("/api/", "/v1/")) or request.headers.get(
        "Accept", ""
    ).startswith("application/json")


def _answer(request: HttpRequest, status: int, message: str) -> HttpResponse:
    if _is_api(request):
        return JsonResponse({"detail": message, "error": message}, status=status)
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class InputHygieneMiddleware:
    """Refuses, with a 400 naming the parameter, query strings and form fields holding what the
    app cannot store or echo (`common.request_input`: NUL, lone surrogates) — for every page and
    every API view at once, not view by view. It looks at form fields only after the body gate
    (`BodyGateMiddleware`) has let the body in, and leaves the API's bodies to its parsers
    (csrf-exempt views parse their own body after authenticating the client)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = text_problem(request.path)
        if problem:
            return _answer(request, 400, f"the URL: {problem} are not allowed")
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):  # type: ignore[no-untyped-def]
        try:
            check_pairs(request.GET.lists(), "query parameter")
            if (
                request.method in ("POST", "PUT", "PATCH")
                and not getattr(view_func, "csrf_exempt", False)
                and request.content_type in FORM_TYPES
            ):
                check_pairs(request.POST.lists(), "form field")
                check_pairs(request.FILES.lists(), "file field")
        except BadInput as exc:
            return _answer(request, 400, str(exc))
        return None
