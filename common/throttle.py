"""Failure counting and lockout for authentication: password logins and
bearer tokens. Counters live in the default cache, which settings point at Redis (or files on
one machine), so every gunicorn worker and every web container sees the same counts.

A key (an IP address, an account) that fails `limit` times within `window` seconds is locked for
`lockout` seconds: while locked every attempt is refused with 429 and Retry-After, before any
password hash or token lookup is spent on it.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest


@dataclass(frozen=True)
class Policy:
    scope: str  # "login-ip", "login-account", "token-ip"
    limit: int
    window: int
    lockout: int


def policy(scope: str) -> Policy:
    limits = settings.TA_AUTH_THROTTLE
    return Policy(
        scope=scope,
        limit=limits[scope],
        window=settings.TA_AUTH_FAILURE_WINDOW_SECONDS,
        lockout=settings.TA_AUTH_LOCKOUT_SECONDS,
    )


def client_ip(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or the header a trusted proxy in front sets
    (TA_CLIENT_IP_HEADER, e.g. HTTP_X_REAL_IP) — never one a client could send directly."""
    header = settings.TA_CLIENT_IP_HEADER
    if header:
        value = request.META.get(header, "").split(",")[0].strip()
        if value:
            return value
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def _key(p: Policy, ident: str, kind: str) -> str:
    # Hashed: identities are client-supplied (any length, any characters).
    digest = hashlib.sha256(ident.lower().encode(errors="replace")).hexdigest()[:32]
    return f"ta:throttle:{p.scope}:{kind}:{digest}"


def retry_after(p: Policy, ident: str) -> int:
    """Seconds until `ident` may try again; 0 when it is not locked."""
    until = cache.get(_key(p, ident, "lock"))
    if until is None:
        return 0
    return max(1, int(until - time.time()) + 1)


def record_failure(p: Policy, ident: str) -> int:
    """Count a failure; lock `ident` when it reaches the limit. Returns the lock's seconds, 0
    when not locked."""
    key = _key(p, ident, "fails")
    cache.add(key, 0, timeout=p.window)  # the window starts at the first failure
    try:
        n = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=p.window)
        n = 1
    if n >= p.limit:
        cache.set(_key(p, ident, "lock"), time.time() + p.lockout, timeout=p.lockout)
        cache.delete(key)
        return p.lockout
    return 0


def reset(p: Policy, ident: str) -> None:
    """A success clears the failures counted against `ident` (not a lock already set)."""
    cache.delete(_key(p, ident, "fails"))
