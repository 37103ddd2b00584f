"""The model-call cache is keyed by what determines the answer and by tenant: project B's
cached answers — from a rigged server under the same model name, or even from the same
endpoint URL — never reach project A, which asks its own endpoint; with the operator's opt-in
(``TA_MODEL_CACHE_SHARED``) the same endpoint's answers are shared across projects, and still
never those of another URL. Inline runs on real PostgreSQL against scripted servers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from auditor.llm.endpoints import endpoint_by_ref, endpoint_save
from auditor.llm.settings import model_settings_from
from auditor.models import AuditResult, ModelCallRecord, RunModelUsage
from auditor.runs.services import audit_run_create, audit_run_start
from tests.builders.v1 import lock_cases
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.policies.llm.scripts import verifier_against
from traces.models import Membership, Project
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db

N = 2


@pytest.fixture(autouse=True)
def _loopback(settings):  # type: ignore[no-untyped-def]
    settings.TA_MODEL_ALLOWED_HOSTS = "127.0.0.1"


def rigged(body: dict[str, Any]) -> Reply:
    """A server that always prefers the actor's call (poisoned verdicts)."""
    user = body["messages"][-1]["content"]
    a_line = next(line for line in user.splitlines() if line.startswith("Candidate A:"))
    actor = "A" if "unlock_account" in a_line else "B"
    twin = "B" if actor == "A" else "A"
    verdict = {
        "scores": {actor: 4, twin: 0},
        "fatal": {actor: False, twin: True},
        "prefer": actor,
        "confidence": 0.99,
    }
    return Reply.text(json.dumps(verdict))


def project_with_traces(name: str, owner) -> Project:  # type: ignore[no-untyped-def]
    p = Project.objects.create(name=name)
    Membership.objects.create(project=p, user=owner, role=Membership.Role.OWNER)
    up, _ = upload_create(
        project=p, fileobj=lock_cases(N), filename="l.jsonl", source="cli", enqueue=False
    )
    assert upload_process(upload_id=up.pk).traces_accepted == N
    return p


def audit(project: Project, url: str):  # type: ignore[no-untyped-def]
    name = "e" + url.rsplit(":", 1)[1].split("/")[0]  # one endpoint per server and project
    ep = endpoint_by_ref(project=project, ref=name) or endpoint_save(
        project=project, values={"name": name, "base_url": url, "model": "judge-1"}
    )
    settings = model_settings_from(
        {"endpoint": ep.name}, {"max_retries": 0}, judge="llm", project=project
    )
    run = audit_run_create(
        project=project, policies=["twincheck"], judge="llm", model_settings=settings, enqueue=False
    )
    audit_run_start(run_id=run.pk, inline=True)
    run.refresh_from_db()
    assert run.status == "done" and run.error_count == 0
    return run


def replaced(run) -> list[bool]:  # type: ignore[no-untyped-def]
    return [
        r.record["decisions"][0]["gate"]["replace"]
        for r in AuditResult.objects.filter(run=run).order_by("trace_id")
    ]


def test_project_b_answers_never_reach_project_a(alice, django_user_model, settings):
    bob = django_user_model.objects.create_user("bob", password="pw")
    a, b = project_with_traces("a", alice), project_with_traces("b", bob)
    honest = FakeOpenAI(verifier_against("unlock_account")).start()
    poison = FakeOpenAI(rigged).start()
    try:
        # B's rigged server answers first, under the same model name and request bodies.
        run_b = audit(b, poison.url)
        assert poison.count == 2 * N and replaced(run_b) == [False] * N
        run_a = audit(a, honest.url)
        assert honest.count == 2 * N  # every call asked A's own endpoint
        assert replaced(run_a) == [True] * N
        bodies = {json.dumps(x, sort_keys=True) for x in honest.bodies()}
        assert bodies == {json.dumps(x, sort_keys=True) for x in poison.bodies()}
        # The same URL in both projects: still one cache per project.
        run_b2 = audit(b, honest.url)
        assert honest.count == 4 * N and replaced(run_b2) == [True] * N
        usage = RunModelUsage.objects.get(run=run_b2)
        assert (usage.cache_hits, usage.http_requests) == (0, 2 * N)
        assert ModelCallRecord.objects.filter(project=a).count() == 2 * N
        assert ModelCallRecord.objects.filter(project=b).count() == 4 * N
        assert not ModelCallRecord.objects.filter(project__isnull=True).exists()

        # The operator's opt-in: the same endpoint's answers are served across projects …
        settings.TA_MODEL_CACHE_SHARED = True
        shared_b = audit(b, honest.url)
        assert honest.count == 6 * N  # asked once more, into the shared entries …
        shared_a = audit(a, honest.url)
        assert honest.count == 6 * N  # … and A's run is served from them: no request
        usage = RunModelUsage.objects.get(run=shared_a)
        assert (usage.cache_hits, usage.http_requests) == (2 * N, 0)
        assert replaced(shared_a) == replaced(shared_b) == [True] * N
        # … but never another URL's: the rigged server's answers stay its own.
        poisoned_shared = audit(b, poison.url)
        assert poison.count == 4 * N and replaced(poisoned_shared) == [False] * N
        again_a = audit(a, honest.url)
        assert honest.count == 6 * N and replaced(again_a) == [True] * N
    finally:
        honest.stop()
        poison.stop()
