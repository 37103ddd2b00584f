"""Model-backed audits through a real Celery worker process, PostgreSQL and Redis, against the
scripted OpenAI-compatible server: the llm judge decides through the worker, a re-run is served
from the database cache with zero HTTP requests and byte-identical results, a broken endpoint
fails only the decisions it served, the budget stops model calls cleanly, and the API key (stored
encrypted with the project's model endpoint) is in no row, record, page or `audit --json`."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from auditor.llm.endpoints import endpoint_save
from auditor.models import AuditResult, AuditRun, ModelCallRecord, ModelEndpoint, RunModelUsage
from auditor.runs.services import audit_run_create, audit_run_start
from tests.conftest import N_TRACES, decisions, wait_for
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.policies.llm.scripts import verifier_against

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

KEY = "sk-wirea-integration-0123456789-secret"


@pytest.fixture()
def server() -> Iterator[FakeOpenAI]:
    s = FakeOpenAI().start()
    yield s
    s.stop()


@pytest.fixture()
def endpoint(project, server: FakeOpenAI, settings) -> ModelEndpoint:  # type: ignore[no-untyped-def]
    """The project's endpoint at the scripted server, with the key stored encrypted. Loopback
    is allowed here and in the session's worker (tests/conftest.py) for the scripted server."""
    settings.TA_MODEL_ALLOWED_HOSTS = "127.0.0.1"
    values = {"name": "judge", "base_url": server.url, "model": "judge-1", "key": KEY}
    return endpoint_save(project=project, values=values)


def model_settings(ep: ModelEndpoint, **kw: Any) -> dict[str, Any]:
    endpoint = {
        "base_url": ep.base_url,
        "model": "judge-1",
        "timeout": 1.0,
        "max_retries": 0,
        "backoff_base": 0.01,
        **kw.pop("endpoint", {}),
    }
    ref = {"endpoint_id": ep.pk, "endpoint_name": ep.name}
    return {"endpoint": endpoint, "uses": ["judge"], **ref, **kw}


def run_to_done(project, settings: dict[str, Any]) -> AuditRun:  # type: ignore[no-untyped-def]
    run = audit_run_create(
        project=project, policies=["twincheck"], judge="llm", model_settings=settings
    )
    wait_for(lambda: AuditRun.objects.get(pk=run.pk).status == "done", timeout=120)
    return AuditRun.objects.get(pk=run.pk)


def test_llm_judge_through_the_worker_rerun_from_cache_and_no_key_anywhere(
    celery_worker_process, lock_project, server, endpoint, client, alice
):
    server.responder = verifier_against("unlock_account")
    settings = model_settings(endpoint)
    first = run_to_done(lock_project, settings)
    assert first.error_count == 0
    # Two orientations per held certificate, each a real request with the key in its header.
    assert server.count == 2 * N_TRACES
    assert all(r.headers["Authorization"] == f"Bearer {KEY}" for r in server.requests)
    one = decisions(first)
    # Accepted everywhere; the toy environment is not the app's, so the guarded outcome of the
    # replacement is unknown (it goes to annotation), never guessed.
    assert [t for _, t, _ in one] == ["unknown"] * N_TRACES
    assert all(
        r.record["decisions"][0]["gate"]["replace"] for r in AuditResult.objects.filter(run=first)
    )
    rec = AuditResult.objects.filter(run=first).first().record["decisions"][0]
    assert rec["judge"] == "llm" and rec["gate"]["replace"]
    keys = {j["call"]["cache_key"] for j in rec["judgments"]}
    assert len(keys) == 2 and ModelCallRecord.objects.filter(key__in=keys).count() == 2
    usage = RunModelUsage.objects.get(run=first)
    assert (usage.made, usage.cache_hits, usage.http_requests, usage.failures) == (
        2 * N_TRACES,
        0,
        2 * N_TRACES,
        0,
    )
    assert usage.tokens == 15 * 2 * N_TRACES  # the fake server's usage: 10 + 5 per call

    # The same audit again: every call from the shared cache, not one HTTP request.
    before = server.count
    second = run_to_done(lock_project, settings)
    assert server.count == before
    assert decisions(second) == one  # byte-identical
    usage2 = RunModelUsage.objects.get(run=second)
    assert (usage2.made, usage2.cache_hits, usage2.http_requests) == (2 * N_TRACES, 2 * N_TRACES, 0)

    # The key is in no row, record, page or CLI output.
    client.force_login(alice)
    page = client.get(reverse("auditor:run", args=[second.pk])).content.decode()
    assert "Model calls" in page and "cache hits" in page
    assert "TwinCheck per certificate" in page
    trace_id = AuditResult.objects.filter(run=second).first().trace_id
    trace_page = client.get(reverse("auditor:trace", args=[trace_id])).content.decode()
    # The trace page's TwinCheck panel shows each model call's prompt and response.
    assert "Model calls (2)" in trace_page and "Candidate A: call unlock_account" in trace_page
    assert "&quot;prefer&quot;" in trace_page
    out = io.StringIO()
    call_command(
        "audit",
        "--project",
        lock_project.name,
        "--policies",
        "twincheck",
        "--set",
        "judge=llm",
        "--model-endpoint",
        "judge",
        "--set",
        "model.timeout=1",
        "--set",
        "model.max_retries=0",
        "--inline",
        "--json",
        stdout=out,
    )
    cli = json.loads(out.getvalue())
    assert cli["model"]["calls"] == 2 * N_TRACES and cli["model"]["cache_hits"] == 2 * N_TRACES
    assert cli["policies"]["twincheck"]["report"]["per_certificate"]["all"]["accepted"] == N_TRACES
    assert server.count == before  # the CLI's run too came from the cache
    stored = json.dumps(
        [
            list(AuditRun.objects.values()),
            list(AuditResult.objects.values("record", "guarded_trajectory")),
            list(ModelCallRecord.objects.values()),
            list(RunModelUsage.objects.values()),
        ],
        default=str,
    )
    for text in (stored, page, trace_page, out.getvalue()):
        assert KEY not in text and endpoint.key_encrypted not in text
    assert '"endpoint_name": "judge"' in stored  # what is stored is which endpoint, not its key
    assert ModelEndpoint.objects.get().key_encrypted and KEY not in endpoint.key_encrypted


def test_a_broken_endpoint_fails_only_the_decisions_it_served(
    celery_worker_process, lock_project, server, endpoint
):
    sensible = verifier_against("unlock_account")

    def broken(body: dict[str, Any]) -> Reply:
        user = body["messages"][-1]["content"]
        if "(case 0)" in user:
            return Reply.garbage()
        if "(case 1)" in user:
            return Reply.error(500)
        if "(case 2)" in user:
            return Reply(hang=3)
        return sensible(body)

    server.responder = broken
    run = run_to_done(lock_project, model_settings(endpoint))
    assert run.error_count == 0 and run.traces_done == N_TRACES  # the run completes
    by_trace = {
        r.trace.external_id: r for r in AuditResult.objects.filter(run=run).select_related("trace")
    }
    expected = {"lock-0": "malformed response", "lock-1": "HTTP 500", "lock-2": "timeout"}
    for tid, reason in expected.items():
        d = by_trace[tid].record["decisions"][0]
        assert not d["gate"]["replace"] and "judge error" in d["gate"]["reason"]
        assert reason in d["judgments"][0]["error"]
        assert by_trace[tid].continuation == "exact"  # the actor's call was kept
    assert by_trace["lock-3"].record["decisions"][0]["gate"]["replace"]
    usage = RunModelUsage.objects.get(run=run)
    assert usage.failures >= 3 and usage.failure_reasons
    # Failures are not cached: the same audit asks the endpoint again for them only.
    assert not ModelCallRecord.objects.filter(request__messages__1__content__contains="(case 0)")


def test_the_budget_stops_model_calls_and_the_run_says_so(
    celery_worker_process, lock_project, server, endpoint, client, alice
):
    server.responder = verifier_against("unlock_account")
    run = run_to_done(lock_project, model_settings(endpoint, max_calls=2))
    assert run.error_count == 0 and run.traces_done == N_TRACES
    assert server.count == 2
    usage = RunModelUsage.objects.get(run=run)
    assert usage.budget_reached and usage.calls == 2
    reasons = [
        j.get("error")
        for r in AuditResult.objects.filter(run=run)
        for d in r.record["decisions"]
        for j in d["judgments"]
    ]
    assert reasons.count("budget reached") == 2 * N_TRACES - 2
    client.force_login(alice)
    page = client.get(reverse("auditor:run", args=[run.pk])).content.decode()
    assert "Model budget reached (2 of 2 model calls)" in page


def test_a_removed_or_moved_endpoint_fails_the_traces_with_the_reason(
    celery_worker_process, lock_project, server, endpoint
):
    """A key is only ever sent to the URL its owner saved it with: a run whose endpoint was
    removed, or now points elsewhere, fails its traces with the reason and sends nothing."""
    moved = audit_run_create(
        project=lock_project,
        policies=["twincheck"],
        judge="llm",
        model_settings=model_settings(endpoint),
        enqueue=False,
    )
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(base_url=server.url + "/other")
    audit_run_start(run_id=moved.pk)
    wait_for(lambda: AuditRun.objects.get(pk=moved.pk).is_finished, timeout=120)
    moved.refresh_from_db()
    assert moved.error_count == N_TRACES and server.count == 0
    assert set(moved.items.values_list("error", flat=True)) == {
        "model: the model endpoint 'judge' points to another URL than when the run was "
        "started; start a new audit"
    }
    gone = audit_run_create(
        project=lock_project,
        policies=["twincheck"],
        judge="llm",
        model_settings=model_settings(endpoint),
        enqueue=False,
    )
    ModelEndpoint.objects.filter(pk=endpoint.pk).delete()
    audit_run_start(run_id=gone.pk)
    wait_for(lambda: AuditRun.objects.get(pk=gone.pk).is_finished, timeout=120)
    gone.refresh_from_db()
    assert gone.error_count == N_TRACES and server.count == 0
    errors = set(gone.items.values_list("error", flat=True))
    assert errors == {"model: the model endpoint 'judge' no longer exists"}
