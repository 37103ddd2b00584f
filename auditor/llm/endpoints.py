"""A project's model endpoints: saving them (owners only, every field checked), the key a
worker sends, and the operator's network and cache settings as policies/llm objects.

The key an endpoint holds is either stored encrypted (`auditor.llm.key_crypto`) or read from an
environment variable the operator lists in ``TA_MODEL_KEY_ENVS``; no other variable and no file
is ever read, whatever a request says. Its URL is checked when saved and again at every request
(`policies.llm.netguard`; ``TA_MODEL_ALLOWED_HOSTS`` names the exceptions).
"""

from __future__ import annotations

import os
import re
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from auditor.llm.key_crypto import decrypt, encrypt
from auditor.llm.models import ModelEndpoint
from policies.llm.netguard import AddressGuard
from traces.models import Project
from traces.selectors import role_of

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
MAX_KEY = 4096
#: The fields an endpoint has; anything else in a request is refused by name.
FIELDS = ("name", "base_url", "model", "key", "key_env", "clear_key")
#: Fields of the design before endpoints, with what to use instead.
OLD_FIELDS = {
    "api_key": "the key is never an audit setting; store it with a model endpoint ('key')",
    "api_key_env": (
        "a server environment variable cannot be named by a request; an owner stores the key "
        "with a model endpoint ('key'), or names one of the variables the operator lists in "
        "TA_MODEL_KEY_ENVS ('key_env')"
    ),
    "api_key_file": (
        "a server file cannot be named by a request; an owner stores the key with a model "
        "endpoint ('key')"
    ),
}


class EndpointRejected(ValueError):
    """A bad endpoint field; the message starts with the field's name."""


def guard() -> AddressGuard:
    """Where model requests may go, per the operator's ``TA_MODEL_ALLOWED_HOSTS``."""
    return AddressGuard.parse(str(getattr(settings, "TA_MODEL_ALLOWED_HOSTS", "") or ""))


def tenant(project_id: int) -> str:
    """Whose cached answers a project's calls are: its own, unless the operator shares them."""
    return "shared" if settings.TA_MODEL_CACHE_SHARED else f"project:{project_id}"


def is_owner(*, user: Any, project: Project) -> bool:
    return role_of(user=user, project=project) == "owner"


def endpoint_list(*, project: Project) -> QuerySet[ModelEndpoint]:
    """The project's endpoints (callers check that the user is an owner)."""
    return ModelEndpoint.objects.filter(project=project).order_by("name")


def endpoint_by_ref(*, project: Project, ref: Any) -> ModelEndpoint | None:
    """One of the project's endpoints by name or id; None when there is none."""
    ref = str(ref).strip()
    if not ref or len(ref) > 100 or any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in ref):
        return None  # no endpoint has such a name (and the database takes no NUL)
    found = endpoint_list(project=project).filter(name=ref).first()
    if found is None and ref.isascii() and ref.isdigit() and len(ref) < 19:
        found = endpoint_list(project=project).filter(pk=int(ref)).first()
    return found


def refuse_old_fields(values: Any, where: str = "") -> None:
    """`EndpointRejected` naming the first field of the old design in ``values``."""
    if not isinstance(values, dict):
        return
    for name, instead in OLD_FIELDS.items():
        if name in values:
            raise EndpointRejected(f"{where}{name}: not accepted: {instead}")


def _text(values: dict[str, Any], name: str, limit: int) -> str | None:
    if name not in values or values[name] is None:
        return None
    value = values[name]
    if not isinstance(value, str):
        raise EndpointRejected(f"{name}: expected text, got {type(value).__name__}")
    value = value.strip()
    if len(value) > limit:
        raise EndpointRejected(f"{name}: at most {limit} characters")
    if any(ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise EndpointRejected(f"{name}: control characters are not allowed")
    return value


def check_url(url: str) -> None:
    problem = guard().check_url(url)
    if problem:
        raise EndpointRejected(problem)


def endpoint_save(
    *,
    project: Project,
    values: dict[str, Any],
    endpoint: ModelEndpoint | None = None,
    user: Any = None,
) -> ModelEndpoint:
    """Create (``endpoint`` None) or change an endpoint from ``values`` (`FIELDS`; absent ones
    keep their value on a change). ``key``: the key itself (stored encrypted; "" keeps the
    stored one); ``key_env``: an allowed variable's name; ``clear_key``: no key."""
    if not isinstance(values, dict):
        raise EndpointRejected("body: expected a JSON object")
    refuse_old_fields(values)
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise EndpointRejected(f"{unknown[0]}: not an endpoint field (fields: {', '.join(FIELDS)})")
    ep = endpoint if endpoint is not None else ModelEndpoint(project=project)
    name = _text(values, "name", 100)
    if name is not None or endpoint is None:
        if not name or not NAME.fullmatch(name):
            raise EndpointRejected(
                "name: letters, digits, '.', '_' and '-', starting with a letter or digit "
                "(at most 100)"
            )
        ep.name = name
    base_url = _text(values, "base_url", 500)
    if base_url is not None or endpoint is None:
        if not base_url:
            raise EndpointRejected("base_url: required, e.g. https://api.openai.com/v1")
        check_url(base_url)
        ep.base_url = base_url.rstrip("/")
    model = _text(values, "model", 200)
    if model is not None:
        ep.model = model
    key = _secret(values.get("key"))
    key_env = _text(values, "key_env", 100)
    clear = values.get("clear_key") in (True, "1", "true", "on", "yes")
    if sum(bool(x) for x in (key, key_env, clear)) > 1:
        raise EndpointRejected("key: give a key, an allowed variable (key_env) or clear_key")
    if key:
        ep.key_encrypted, ep.key_env = encrypt(key), ""
        ep.key_hint = key[-4:] if len(key) >= 16 else ""
    elif key_env:
        allowed = list(settings.TA_MODEL_KEY_ENVS)
        if key_env not in allowed:
            raise EndpointRejected(
                f"key_env: {key_env!r} is not a variable the operator allows "
                f"(TA_MODEL_KEY_ENVS: {', '.join(allowed) if allowed else 'none'})"
            )
        ep.key_env, ep.key_encrypted, ep.key_hint = key_env, "", ""
    elif clear:
        ep.key_env, ep.key_encrypted, ep.key_hint = "", "", ""
    if endpoint is None and user is not None and getattr(user, "pk", None) is not None:
        ep.created_by = user
    try:
        with transaction.atomic():
            ep.save()
    except IntegrityError:
        raise EndpointRejected(f"name: the project already has an endpoint {ep.name!r}") from None
    return ep


def _secret(value: Any) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise EndpointRejected(f"key: expected text, got {type(value).__name__}")
    value = value.strip()
    if len(value) > MAX_KEY:
        raise EndpointRejected(f"key: at most {MAX_KEY} characters")
    if any(ord(c) < 33 or ord(c) > 126 for c in value):
        # it goes in an HTTP header: one line of visible ASCII
        raise EndpointRejected("key: one line of visible ASCII characters, no spaces")
    return value


def endpoint_key(ep: ModelEndpoint) -> str:
    """The key a request to ``ep`` sends ("" for none). `ValueError` with the reason when it
    cannot be had — never the key's text."""
    if ep.key_encrypted:
        return decrypt(ep.key_encrypted)
    if ep.key_env:
        if ep.key_env not in settings.TA_MODEL_KEY_ENVS:
            raise ValueError(
                f"the endpoint {ep.name!r} names {ep.key_env}, which the operator no longer "
                f"allows (TA_MODEL_KEY_ENVS)"
            )
        return os.environ.get(ep.key_env, "").strip()
    return ""


def endpoint_public(ep: ModelEndpoint) -> dict[str, Any]:
    """What an owner may read of an endpoint: everything but the key."""
    return {
        "id": ep.pk,
        "name": ep.name,
        "base_url": ep.base_url,
        "model": ep.model,
        "key": ep.key_source,
        "key_set": bool(ep.key_encrypted or ep.key_env),
        "created_at": ep.created_at.isoformat() if ep.created_at else None,
        "updated_at": ep.updated_at.isoformat() if ep.updated_at else None,
    }
