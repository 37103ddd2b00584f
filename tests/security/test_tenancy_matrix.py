"""Every endpoint x every role x a foreign project, each with its expected status.

Projects are the tenancy boundary (SPEC §8). Roles: owner, annotator, viewer (members of
"alpha"), outsider (owner of "beta" only), anonymous, and a project token of alpha (API only).
An outsider gets 404 — never 403 — so ids of other projects cannot be probed.
"""

from __future__ import annotations

import pytest
from django.test import Client

from auditor.annotation.services import queue_create
from auditor.exports.services import export_build, export_create
from auditor.models import AuditRun
from auditor.runs.services import audit_run_create, audit_run_start
from tests.builders.v1 import jsonl, simple_trace
from traces.models import Membership, Project, ProjectToken
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db

ROLES = ("owner", "annotator", "viewer", "outsider", "anonymous", "token")


@pytest.fixture
def world(django_user_model):  # type: ignore[no-untyped-def]
    alpha, beta = Project.objects.create(name="alpha"), Project.objects.create(name="beta")
    users = {}
    for role in ("owner", "annotator", "viewer"):
        users[role] = django_user_model.objects.create_user(role, password="pw")
        Membership.objects.create(project=alpha, user=users[role], role=role)
    users["outsider"] = django_user_model.objects.create_user("outsider", password="pw")
    Membership.objects.create(project=beta, user=users["outsider"], role="owner")
    events = simple_trace("a")
    events.insert(
        2,
        {
            "trace_id": "a",
            "type": "message",
            "role": "user",
            "content": "Sure?",
            "feedback": {"kind": "challenge"},
            "labels": {"valid": False},
        },
    )
    up, _ = upload_create(
        project=alpha, fileobj=jsonl(events), filename="a.jsonl", source="cli", enqueue=False
    )
    up = upload_process(upload_id=up.pk)
    trace = up.traces.get()
    run = audit_run_create(project=alpha, environment="none", enqueue=False)
    audit_run_start(run_id=run.pk, inline=True)
    run = AuditRun.objects.get(pk=run.pk)
    queue = queue_create(run=run, name="q", user=users["owner"])
    export = export_create(project=alpha, format="jsonl", user=users["owner"], enqueue=False)
    export_build(export_id=export.pk)
    # The strongest token (write scope): even it sees nothing of another project.
    token, raw = ProjectToken.issue(project=alpha, name="agent", scope="write")
    return {
        "alpha": alpha,
        "users": users,
        "upload": up,
        "trace": trace,
        "run": run,
        "queue": queue,
        "export": export,
        "token": token,
        "raw": raw,
    }


def client_for(world, role: str) -> Client:  # type: ignore[no-untyped-def]
    c = Client()
    if role == "token":
        c.defaults["HTTP_AUTHORIZATION"] = f"Bearer {world['raw']}"
    elif role != "anonymous":
        c.force_login(world["users"][role])
    return c


def pages(w) -> list[tuple[str, str, dict[str, int]]]:  # type: ignore[no-untyped-def]
    """(method, url, expected status per role). Anonymous pages redirect to the login page;
    the token is an API identity, which pages treat as anonymous."""
    p, u, t, r, q, e = (
        w["alpha"].pk,
        w["upload"].pk,
        w["trace"].pk,
        w["run"].pk,
        w["queue"].pk,
        w["export"].pk,
    )
    read = {
        "owner": 200,
        "annotator": 200,
        "viewer": 200,
        "outsider": 404,
        "anonymous": 302,
        "token": 302,
    }
    write = {
        "owner": 200,
        "annotator": 200,
        "viewer": 403,
        "outsider": 404,
        "anonymous": 302,
        "token": 302,
    }
    owner_only = {**write, "annotator": 403}
    mo = Membership.objects.get(project=w["alpha"], user=w["users"]["owner"]).pk
    mv = Membership.objects.get(project=w["alpha"], user=w["users"]["viewer"]).pk
    return [
        ("get", f"/projects/{p}/", read),
        ("get", f"/projects/{p}/traces/", read),
        ("get", f"/projects/{p}/upload/", write),
        ("get", f"/projects/{p}/audits/new/", write),
        ("get", f"/projects/{p}/exports/", read),
        ("get", f"/uploads/{u}/", read),
        ("get", f"/uploads/{u}/errors/", read),
        ("get", f"/uploads/{u}/raw/", read),
        # The delete confirmation (it names what goes and deletes nothing): owners only.
        ("get", f"/uploads/{u}/delete/", {**owner_only, "owner": 200}),
        ("get", f"/traces/{t}/", read),
        ("get", f"/traces/{t}/events/1/", read),
        # The "load more" fragment: without htmx it sends the browser to the page's window.
        (
            "get",
            f"/traces/{t}/events/?after_seq=0",
            {**read, "owner": 302, "annotator": 302, "viewer": 302},
        ),
        ("get", f"/audits/{r}/", read),
        # the audit's decisions, trace by trace: not for annotators (their verdicts stay blind)
        ("get", f"/audits/compare/?a={r}&b={r}", {**read, "annotator": 403}),
        ("get", f"/audits/{r}/matrix/", {**read, "annotator": 403}),
        ("get", f"/audits/{r}/queues/", read),
        ("get", f"/queues/{q}/", read),
        ("get", f"/queues/{q}/annotate/", write),
        ("get", f"/exports/{e}/", read),
        ("get", f"/exports/{e}/download/", {**read, "annotator": 403}),
        ("get", f"/projects/{p}/members/", read),
        # Every signed-in user may create a project; pages treat a token as anonymous.
        ("get", "/projects/new/", {**read, "outsider": 200}),
        # An empty add is refused with a clear error (400) — but only after the role check.
        ("post", f"/projects/{p}/members/", {**owner_only, "owner": 400}),
        # An empty role is refused and the owner is sent back; a change needs an owner.
        ("post", f"/projects/{p}/members/{mv}/role/", {**owner_only, "owner": 302}),
        # Removing the only owner is refused (the owner is sent back with the reason).
        ("post", f"/projects/{p}/members/{mo}/remove/", {**owner_only, "owner": 302}),
        # Checked list rows into a queue: nothing checked is refused, back to the run (302).
        ("post", f"/audits/{r}/queues/add/", {**owner_only, "owner": 302}),
        ("post", f"/projects/{p}/tokens/", {**owner_only, "owner": 302}),
        ("post", f"/projects/{p}/tokens/{w['token'].pk}/revoke/", {**owner_only, "owner": 302}),
        # the code-execution switch: owners only; no value is a clear 400, never a change
        ("post", f"/projects/{p}/sandbox/", {**owner_only, "owner": 400}),
        ("post", f"/uploads/{u}/retry/", {**write, "owner": 302, "annotator": 302}),
        ("post", f"/audits/{r}/retry/", {**write, "owner": 302, "annotator": 302}),
    ]


def api(w) -> list[tuple[str, str, dict[str, int]]]:  # type: ignore[no-untyped-def]
    u, t, e = w["upload"].pk, w["trace"].pk, w["export"].pk
    read = {
        "owner": 200,
        "annotator": 200,
        "viewer": 200,
        "outsider": 404,
        "anonymous": 401,
        "token": 200,
    }
    return [
        ("get", f"/api/uploads/{u}/", read),
        # Without ?confirm=true an owner is told what would go (400); nothing is deleted. A
        # token, even of the write scope, is no owner.
        (
            "delete",
            f"/api/uploads/{u}/",
            {**read, "owner": 400, "annotator": 403, "viewer": 403, "token": 403},
        ),
        ("get", f"/api/traces/{t}/", read),
        ("get", f"/api/traces/{t}/events/", read),
        ("get", f"/api/exports/{e}/", read),
        ("get", f"/api/exports/{e}/download/", {**read, "annotator": 403}),
    ]


def run_matrix(w, rows) -> list[str]:  # type: ignore[no-untyped-def]
    wrong = []
    for role in ROLES:
        c = client_for(w, role)
        for method, url, expected in rows:
            status = getattr(c, method)(url).status_code
            if status != expected[role]:
                wrong.append(
                    f"{role:9} {method.upper():4} {url}: {status}, expected {expected[role]}"
                )
    return wrong


def test_every_page_for_every_role(world):
    assert run_matrix(world, pages(world)) == []


def test_every_api_endpoint_for_every_role(world):
    assert run_matrix(world, api(world)) == []


def test_lists_show_nothing_of_other_projects(world):
    for role in ("outsider",):
        c = client_for(world, role)
        assert c.get("/api/traces/").json() == []
        assert c.get("/api/uploads/").json() == []


def test_upload_api_per_role(world):
    expected = {
        "owner": 202,
        "annotator": 202,
        "viewer": 403,
        "outsider": 404,
        "token": 202,
        "anonymous": 401,
    }
    wrong = []
    for i, role in enumerate(ROLES):
        c = client_for(world, role)
        body = jsonl(simple_trace(f"up-{role}-{i}"))
        status = c.post(
            "/api/uploads/?project=alpha", data=body, content_type="application/x-ndjson"
        ).status_code
        if status != expected[role]:
            wrong.append(f"{role}: {status}, expected {expected[role]}")
    assert wrong == []


def test_a_revoked_token_stops_working(world):
    c = client_for(world, "owner")
    c.post(f"/projects/{world['alpha'].pk}/tokens/{world['token'].pk}/revoke/")
    api_client = client_for(world, "token")
    assert api_client.get(f"/api/uploads/{world['upload'].pk}/").status_code == 401
