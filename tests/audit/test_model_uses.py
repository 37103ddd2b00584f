"""The other model uses through the app's run (inline, real PostgreSQL, the scripted server):
claim elicitation feeds the checklist and the commit rule's re-check is asked live — each call
stored once in the shared cache and referenced from the decision record."""

from __future__ import annotations

import json
from typing import Any

import pytest

from auditor.models import AuditResult, ModelCallRecord, RunModelUsage
from auditor.runs.services import audit_run_create, audit_run_start
from tests.builders.events import pushback_trace
from tests.builders.v1 import jsonl
from tests.fakes.openai_server import FakeOpenAI, Reply
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _loopback_model_server(settings):  # type: ignore[no-untyped-def]
    """The scripted server listens on 127.0.0.1, which model requests may not reach unless
    the operator allows it."""
    settings.TA_MODEL_ALLOWED_HOSTS = "127.0.0.1"


def scripted(body: dict[str, Any]) -> Reply:
    if body.get("response_format"):  # claim elicitation: one checkable claim per reply
        return Reply.text(
            json.dumps(
                {
                    "claims": [
                        {
                            "id": None,
                            "text": "He did not fail maths",
                            "confidence": 0.9,
                            "subject": "maths",
                        }
                    ]
                }
            )
        )
    return Reply.text("He did not fail maths")  # the re-check: the model keeps its answer


def test_claims_and_recheck_uses_run_through_the_app(project):
    events = pushback_trace([1, 0]) + [
        {**e, "trace_id": "q"} for e in pushback_trace([1, 1], trace_id="q")
    ]
    up, _ = upload_create(
        project=project, fileobj=jsonl(events), filename="p.jsonl", source="cli", enqueue=False
    )
    assert upload_process(upload_id=up.pk).traces_accepted == 2
    server = FakeOpenAI(scripted).start()
    try:
        settings = {
            "endpoint": {"base_url": server.url, "model": "m", "max_retries": 0, "timeout": 2},
            "uses": ["claims", "recheck"],
        }
        run = audit_run_create(
            project=project,
            policies=["checklist", "commit"],
            model_settings=settings,
            environment="none",
            enqueue=False,
        )
        audit_run_start(run_id=run.pk, inline=True)
    finally:
        server.stop()
    run.refresh_from_db()
    assert run.status == "done" and run.error_count == 0
    purposes = {b.get("response_format") is not None for b in server.bodies()}
    assert purposes == {True, False}  # both uses asked the model
    for r in AuditResult.objects.filter(run=run, policy="checklist"):
        elicited = r.record["elicited_claims"]
        assert elicited["failures"] == [] and elicited["calls"]
        for call in elicited["calls"]:
            assert ModelCallRecord.objects.filter(key=call["cache_key"]).exists()
    commit_keys = [
        ref
        for r in AuditResult.objects.filter(run=run, policy="commit")
        for ref in json.dumps(r.record).split('"cache_key": "')[1:]
    ]
    assert commit_keys  # the re-check calls are referenced from the commit rule's records
    usage = RunModelUsage.objects.get(run=run)
    assert usage.made == server.count + usage.cache_hits and usage.failures == 0


def test_an_offline_rerun_from_the_database_cache_makes_no_request(project):
    from tests.builders.v1 import lock_cases
    from tests.conftest import decisions
    from tests.policies.llm.scripts import verifier_against

    up, _ = upload_create(
        project=project, fileobj=lock_cases(3), filename="l.jsonl", source="cli", enqueue=False
    )
    assert upload_process(upload_id=up.pk).traces_accepted == 3
    server = FakeOpenAI(verifier_against("unlock_account")).start()

    def run_with(endpoint: dict[str, Any]):  # type: ignore[no-untyped-def]
        run = audit_run_create(
            project=project,
            policies=["twincheck"],
            judge="llm",
            model_settings={"endpoint": {"model": "judge-1", **endpoint}, "uses": ["judge"]},
            enqueue=False,
        )
        audit_run_start(run_id=run.pk, inline=True)
        run.refresh_from_db()
        return run

    try:
        online = run_with({"base_url": server.url, "max_retries": 0})
    finally:
        server.stop()
    assert server.count == 6
    # the same endpoint's answers (the cache is keyed by its URL), no request, no key
    offline = run_with({"base_url": server.url, "offline": True})
    assert decisions(offline) == decisions(online)
    usage = RunModelUsage.objects.get(run=offline)
    assert (usage.cache_hits, usage.http_requests, usage.failures) == (6, 0, 0)
    # A call the cache lacks fails with its reason; the run still completes.
    other = audit_run_create(
        project=project,
        policies=["twincheck"],
        judge="llm",
        model_settings={
            "endpoint": {"model": "judge-2", "base_url": server.url, "offline": True},
            "uses": ["judge"],
        },
        enqueue=False,
    )
    audit_run_start(run_id=other.pk, inline=True)
    other.refresh_from_db()
    assert other.status == "done" and other.error_count == 0
    errors = {
        j["error"]
        for r in AuditResult.objects.filter(run=other)
        for j in r.record["decisions"][0]["judgments"]
    }
    assert errors == {"not in cache (offline mode)"}
