"""Real Chromium, a real Celery worker and the scripted model server: an owner adds the
project's model endpoint (its key is never shown again), starts an audit with the llm judge from
the form, watches it finish, reads the model-call card and TwinCheck's per-certificate table,
and opens a call's prompt and response on the trace page."""

from __future__ import annotations

import pytest

from auditor.models import AuditRun
from tests.browsing import login, shot, watch
from tests.conftest import N_TRACES
from tests.fakes.openai_server import FakeOpenAI
from tests.policies.llm.scripts import verifier_against

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_llm_audit_from_the_form_to_the_trace_page(
    page,
    live_server,
    celery_worker_process,
    lock_project,
    alice,
    tmp_path,
    settings,
):
    # The scripted server is on loopback: allowed here and in the session's worker.
    settings.TA_MODEL_ALLOWED_HOSTS = "127.0.0.1"
    key = "sk-browser-owner-key-0123456789abcd"
    server = FakeOpenAI(verifier_against("unlock_account")).start()
    try:
        errors = watch(page)
        login(page, live_server, "alice", "alice-pw")
        page.goto(f"{live_server.url}/projects/{lock_project.pk}/")
        page.click("#model-endpoints-link")
        page.fill("#ep_name", "judge")
        page.fill("#ep_base_url", server.url)
        page.fill("#ep_model", "judge-1")
        page.fill("#ep_key", key)
        page.click("#endpoint-form button[type=submit]")
        row = page.locator("#endpoints tr[data-endpoint=judge]")
        assert "stored (…abcd)" in row.inner_text()
        assert key not in page.content() and key[:-4] not in page.content()
        shot(page, tmp_path, "model-endpoints.png")
        page.goto(f"{live_server.url}/projects/{lock_project.pk}/audits/new/")
        for p in ("checklist", "vrr", "commit"):
            page.uncheck(f"input[name=policies][value={p}]")
        page.select_option("#judge", "llm")
        page.select_option("#model_endpoint", "judge")
        page.fill("#model_max_calls", "100")
        page.check("input[name=model_uses][value=judge]")
        shot(page, tmp_path, "run-new-model.png")
        page.click("button[type=submit]")
        page.wait_for_selector("#status[data-status=done]", timeout=60_000)
        run = AuditRun.objects.get()
        assert run.model_settings["endpoint"]["base_url"] == server.url
        card = page.locator("#model-usage")
        assert card.locator("[data-k=calls]").inner_text() == str(2 * N_TRACES)
        assert card.locator("[data-k=cache_hits]").inner_text() == "0"
        assert card.locator("[data-k=failures]").inner_text() == "0"
        table = page.locator("#twincheck-report table[data-table=per-certificate]")
        assert "inverse_action" in table.inner_text()
        shot(page, tmp_path, "run-model.png")

        page.click("text=Traces of this run")
        page.locator("table a[href*='/traces/']").first.click()
        page.click("#model-calls summary")
        calls = page.locator("#model-calls article.model-call")
        assert calls.count() == 2
        assert "Candidate A:" in calls.first.inner_text()
        assert "prefer" in calls.first.inner_text()
        shot(page, tmp_path, "trace-model-calls.png")
        assert errors == []
        assert server.count == 2 * N_TRACES
        assert {r.headers["Authorization"] for r in server.requests} == {f"Bearer {key}"}
        assert key not in page.content()
    finally:
        server.stop()


def test_a_human_judge_run_shows_its_pairs_awaiting_review(
    page, live_server, project, alice, tmp_path
):
    from auditor.runs.services import audit_run_create, audit_run_start
    from tests.annotate.conftest import ingest_bytes, lock_traces

    ingest_bytes(project, lock_traces(3), "locks.jsonl")
    run = audit_run_create(
        project=project, policies=["twincheck"], judge="human", environment="none", enqueue=False
    )
    audit_run_start(run_id=run.pk, inline=True)
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(f"{live_server.url}{run.get_absolute_url()}")
    note = page.locator("#twincheck-report [role=status]")
    assert "3 pairs await review" in " ".join(note.inner_text().split())
    note.locator("a").click()
    # the queue the run opened (waited for: the click starts a navigation, content() would read
    # the page in between)
    page.wait_for_selector("text=TwinCheck pairs of run")
    page.go_back()
    shot(page, tmp_path, "run-human-gate.png")
    assert errors == []
