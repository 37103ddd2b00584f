"""Every URL pattern and every form field, as every role, with hostile input: no 500, no
traceback.

The URLs come from the resolver (`get_resolver`), filled with the ids of one project's objects;
the form fields from the pages themselves (every `name=` of every form a page shows), plus the
API's body fields. Each is sent NUL, lone surrogates, numbers beyond 2⁶³, NaN, wrong types and
JSON nested 1,000 levels, as: anonymous, viewer, annotator, owner, a read token and a write
token. Values are drawn by hypothesis (derandomised, so a run is repeatable), bounded so the
whole walk stays well under a minute.
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.security.test_tenancy_matrix import world  # noqa: F401 — the fixture
from traces.models import Membership, ProjectToken

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

ROLES = ("anonymous", "viewer", "annotator", "owner", "read-token", "write-token")

HOSTILE_TEXT = [
    "a\x00b",
    "\x00",
    "\ud800",
    "x\udfffy",
    "9" * 400,
    str(2**63),
    str(2**64 + 1),
    "-1",
    "NaN",
    "1e999",
    "[" * 1000,
    "{}",
    "",
]
HOSTILE_JSON = [
    2**63,
    -(2**63) - 1,
    1e308,
    -1,
    True,
    None,
    [],
    {},
    "a\x00b",
    "\ud800",
    "x" * 5000,
    [[["deep"]]],
    {"vrr": {"delta": 2**64}},
    {"nope": {}},
]
# Fields of the API's bodies (the schema's request bodies) and common query parameters.
API_FIELDS = (
    "project",
    "format",
    "filters",
    "settings",
    "model",
    "policies",
    "judge",
    "environment",
    "label",
    "filename",
    "runs",
)
QUERY_FIELDS = ("q", "page", "run", "policy", "transition", "category", "project", "a", "b")

EXAMPLES_PER_URL = 3

TRACEBACK = re.compile(rb"Traceback \(most recent call last\)|File \"/[^\"]+\.py\", line \d+")
NAME = re.compile(rb'name="([A-Za-z_][A-Za-z0-9_]*)"')


def _patterns(resolver=None, prefix: str = ""):  # type: ignore[no-untyped-def]
    resolver = resolver or get_resolver()
    for p in resolver.url_patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            yield from _patterns(p, route)
        elif isinstance(p, URLPattern):
            yield route


def _urls(w) -> list[str]:  # type: ignore[no-untyped-def]
    """Every route but the admin's and static files', with ids of `w`'s objects."""
    ids = {
        "projects": w["alpha"].pk,
        "uploads": w["upload"].pk,
        "traces": w["trace"].pk,
        "audits": w["run"].pk,
        "queues": w["queue"].pk,
        "exports": w["export"].pk,
        "tokens": w["token"].pk,
        "members": Membership.objects.filter(project=w["alpha"]).last().pk,
        "events": 1,
    }
    urls = []
    for route in _patterns():
        if route.startswith(("admin/", "static/", "^")) or "(?P" in route:
            continue

        def fill(m: re.Match, route: str = route) -> str:
            before = route[: m.start()].rstrip("/").rsplit("/", 1)[-1]
            return str(ids.get(before, 1))

        url = "/" + re.sub(r"<(?:int:)?\w+>", fill, route)
        urls.append(url)
    return sorted(set(urls))


def _client(w, role: str, raw_tokens: dict[str, str]) -> Client:  # type: ignore[no-untyped-def]
    c = Client(raise_request_exception=False)
    if role.endswith("token"):
        c.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw_tokens[role]}"
    elif role != "anonymous":
        c.force_login(w["users"][role])
    return c


def _form_fields(owner: Client, urls: list[str]) -> dict[str, list[str]]:
    """The `name=` of every form field each page shows its owner."""
    fields = {}
    for url in urls:
        if url.startswith("/api/"):
            continue
        r = owner.get(url)
        body = r.content if r.status_code == 200 and not r.streaming else b""
        fields[url] = sorted({n.decode() for n in NAME.findall(body)} - {"csrfmiddlewaretoken"})
    return fields


def _check(r, what: str, failures: list[str]) -> None:  # type: ignore[no-untyped-def]
    body = b"" if r.streaming else r.content
    if r.status_code >= 500 or TRACEBACK.search(body):
        failures.append(f"{what}: {r.status_code} {body[:200]!r}")


def test_every_endpoint_and_form_answers_hostile_input_without_a_500(world):  # noqa: F811
    w = world
    _t, read_raw = ProjectToken.issue(project=w["alpha"], name="reader", scope="read")
    raw_tokens = {"read-token": read_raw, "write-token": w["raw"]}
    urls = _urls(w)
    assert len(urls) >= 40, urls  # the resolver really lists the app
    clients = {role: _client(w, role, raw_tokens) for role in ROLES}
    forms = _form_fields(clients["owner"], urls)
    assert sum(len(f) for f in forms.values()) >= 20, forms  # the pages really show forms
    failures: list[str] = []

    def send(url: str, text: str, value: object, role: str) -> None:
        c = clients[role]
        raw = text.encode("utf-8", "surrogatepass")  # what a client's bytes can carry
        names = forms.get(url) or list(API_FIELDS if url.startswith("/api/") else QUERY_FIELDS)
        query = {n: raw for n in (*names, *QUERY_FIELDS)}
        _check(c.get(url, query), f"{role} GET {url} {text[:20]!r}", failures)
        if url.startswith("/api/"):
            body = json.dumps({n: value for n in API_FIELDS})
            deep = "[" * 1000 + "]" * 1000
            surrogate = '{"project": "\\ud800", "format": "\\udc00", "label": "\\u0000"}'
            for kind, payload in (("json", body), ("deep", deep), ("surrogate", surrogate)):
                r = c.post(url, payload, content_type="application/json")
                _check(r, f"{role} POST {kind} {url}", failures)
        else:
            data = {n: raw for n in names} or {"x": raw}
            _check(c.post(url, data), f"{role} POST form {url} {text[:20]!r}", failures)

    def drawn_for(url: str):  # type: ignore[no-untyped-def]
        @given(
            text=st.sampled_from(HOSTILE_TEXT),
            value=st.sampled_from(HOSTILE_JSON),
            role=st.sampled_from(ROLES),
        )
        @settings(
            max_examples=EXAMPLES_PER_URL,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def drawn(text: str, value: object, role: str) -> None:
            send(url, text, value, role)

        return drawn

    for url in urls:
        drawn = drawn_for(url)
        drawn()
        for role in ROLES:  # every role once with the nastiest pair, none left to chance
            send(url, "a\x00\ud800", 2**64, role)
    assert failures == []
