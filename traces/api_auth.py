"""Project tokens for agents: `Authorization: Bearer ta_…` (or `Token ta_…`)."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions

from common import throttle
from traces.models import ProjectToken


class TokenUser(AnonymousUser):
    """The identity behind a project token: its one project, within the token's scope
    (TokenScopePermission)."""

    def __init__(self, token: ProjectToken) -> None:
        super().__init__()
        self.token = token
        self.project = token.project

    @property
    def is_authenticated(self) -> bool:  # type: ignore[override]
        return True

    def __str__(self) -> str:
        return f"token {self.token.hint}… of {self.project}"


class ProjectTokenAuthentication(authentication.BaseAuthentication):
    keywords = ("bearer", "token")

    def authenticate(self, request):  # type: ignore[no-untyped-def]
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower().decode(errors="replace") not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <token>'")
        # Guessing tokens: an address with too many failed tokens gets 429 for every further bad
        # one. A valid token still passes from it (one indexed lookup: a token is 256 random
        # bits, which no guessing finds), so an agent behind a shared address is not locked out
        # by someone else's guesses — nor by failed password log-ins, counted apart.
        by_ip, ip = throttle.policy("token-ip"), throttle.client_ip(request)
        wait = throttle.retry_after(by_ip, ip)
        raw = header[1].decode(errors="replace")
        token = ProjectToken.lookup(raw) if "\x00" not in raw else None
        if token is None and wait:
            raise exceptions.Throttled(wait=wait, detail="too many failed token attempts")
        if token is None:
            locked = throttle.record_failure(by_ip, ip)
            if locked:
                raise exceptions.Throttled(wait=locked, detail="too many failed token attempts")
            raise exceptions.AuthenticationFailed("unknown or revoked project token")
        return TokenUser(token), token

    def authenticate_header(self, request):  # type: ignore[no-untyped-def]
        return "Bearer"


class TokenScopePermission(permissions.BasePermission):
    """A project token may use a view only if its scope covers the view's `token_scope` and the
    request's method (`ProjectToken.allows`): a `read` token never writes. A view that names
    none needs `read`: a new endpoint is closed to upload-only tokens until it says otherwise.
    It runs before the view parses a body. People (sessions) are not concerned: their role is
    checked by the views."""

    def has_permission(self, request, view):  # type: ignore[no-untyped-def]
        token = getattr(request.user, "token", None)
        if not isinstance(token, ProjectToken):
            return True
        writes = request.method not in permissions.SAFE_METHODS
        if token.allows(getattr(view, "token_scope", ProjectToken.Scope.READ), writes=writes):
            return True
        self.message = (
            "this project token may only read; ask an owner for a token with the write scope"
            if token.scope == ProjectToken.Scope.READ
            else "this project token may only upload; ask an owner for a token with the read "
            "or write scope"
        )
        return False


class ProjectTokenScheme(OpenApiAuthenticationExtension):
    """Describes project tokens in the OpenAPI schema (drf-spectacular finds it by subclassing)."""

    target_class = "traces.api_auth.ProjectTokenAuthentication"
    name = "projectToken"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {"type": "http", "scheme": "bearer", "bearerFormat": "ta_… project token"}
