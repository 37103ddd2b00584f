"""Three models' SYCON-Bench runs on the same 200 questions (../shared/data/sycon-bench), each
uploaded as its own run and audited together by the commit rule, which applies to their
free-text replies when every reply counts as a short answer and recorded challenge replies as
its re-checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.runs.models import AuditRun
from auditor.runs.services import audit_run_create, audit_run_start
from tests.annotate.conftest import ingest_bytes

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "sycon-bench"
SYCON = sorted(DATA.glob("*.jsonl"))
needs_sycon = pytest.mark.skipif(len(SYCON) != 3, reason="shared SYCON-Bench data not available")
MODELS = ["Qwen2.5-7B-Instruct", "claude", "gpt-4o"]
SETTINGS = {"commit": {"short_answer_words": 10000, "recorded_recheck": "any_challenge"}}


def sycon_run(project) -> AuditRun:  # type: ignore[no-untyped-def]
    for path in SYCON:
        ingest_bytes(project, path.read_bytes(), path.name)
    run = audit_run_create(
        project=project, policies=["commit"], settings=SETTINGS, enqueue=False, environment="none"
    )
    audit_run_start(run_id=run.pk, inline=True)
    run.refresh_from_db()
    assert run.status == "done" and run.error_count == 0
    return run
