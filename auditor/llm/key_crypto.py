"""Encryption at rest of model endpoint keys: Fernet (AES-128-CBC with HMAC-SHA256, from the
``cryptography`` package) under a key from the server's environment, ``TA_SECRETS_KEY`` (a
Fernet key: 32 url-safe base64 bytes). When it is unset, the key is derived from Django's
``SECRET_KEY`` (SHA-256 of a fixed label and it) — fine for a single machine, but rotating
``SECRET_KEY`` then makes stored keys unreadable, so production sets ``TA_SECRETS_KEY``
(docs/models.md "Keys")."""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class KeyUnreadable(ValueError):
    """A stored key cannot be decrypted (``TA_SECRETS_KEY`` changed); the message says so."""


def _fernet() -> Fernet:
    configured = str(getattr(settings, "TA_SECRETS_KEY", "") or "").strip()
    if configured:
        try:
            return Fernet(configured.encode())
        except ValueError as exc:
            raise ImproperlyConfigured(
                "TA_SECRETS_KEY must be a Fernet key (32 url-safe base64-encoded bytes)"
            ) from exc
    digest = hashlib.sha256(b"trace-auditor model keys\0" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def encrypt(key: str) -> str:
    return _fernet().encrypt(key.encode("utf-8")).decode("ascii")


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, ValueError):
        raise KeyUnreadable(
            "the endpoint's stored key cannot be decrypted (TA_SECRETS_KEY or SECRET_KEY "
            "changed since it was saved); an owner sets the key again"
        ) from None
