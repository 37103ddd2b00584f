"""Live BFCL continuation through the app's run: after TwinCheck's first accepted replacement
(the llm judge), the scripted actor continues the task in the real bfcl-eval environment and
BFCL's checker decides — a failed task becomes a rescue only because the continuation passes."""

from __future__ import annotations

import pytest

from auditor.models import AuditResult
from auditor.runs.services import audit_run_create, audit_run_start
from tests.builders.v1 import jsonl
from tests.fakes.openai_server import FakeOpenAI
from traces.services import upload_create, upload_process

pytest.importorskip("bfcl_eval")

from tests.policies.llm.scripts import bfcl_actor, route, verifier_against  # noqa: E402
from tests.policies.llm.test_live_bfcl import SOLUTION, failing_actor  # noqa: E402

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _loopback_model_server(settings):  # type: ignore[no-untyped-def]
    """The scripted server listens on 127.0.0.1, which model requests may not reach unless
    the operator allows it."""
    settings.TA_MODEL_ALLOWED_HOSTS = "127.0.0.1"


@pytest.mark.parametrize(
    "script,expected",
    [(SOLUTION, "rescue"), ([[("cd", {"folder": "nowhere"})]] * 4, "same")],
    ids=["passes", "fails"],
)
def test_live_continuation_decides_the_guarded_outcome(project, script, expected):
    events = failing_actor()
    up, _ = upload_create(
        project=project, fileobj=jsonl(events), filename="b.jsonl", source="cli", enqueue=False
    )
    assert upload_process(upload_id=up.pk).traces_accepted == 1
    server = FakeOpenAI(route(verifier_against("call cd("), bfcl_actor(script))).start()
    try:
        run = audit_run_create(
            project=project,
            policies=["twincheck"],
            judge="llm",
            model_settings={
                "endpoint": {"base_url": server.url, "model": "m", "max_retries": 0},
                "uses": ["judge", "live"],
            },
            enqueue=False,
        )
        audit_run_start(run_id=run.pk, inline=True)
    finally:
        server.stop()
    res = AuditResult.objects.get(run=run)
    assert res.actor_success is False
    assert res.continuation == "live", (res.continuation, res.record.get("continuation_reason"))
    assert res.transition == expected
