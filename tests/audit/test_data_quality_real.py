"""The data-quality section on the real data (`tests.real_data`: the shared files, else their
samples in tests/data/real), through upload and a real audit: none of these published runs has
a foreign candidate, a harness error in place of a reply, a drifted task or a parallel step, and
the section says so — flags empty, "import flagged nothing" on the page — while the rules did
look: each file has the events they read."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from django.urls import reverse

from auditor.runs.models import AuditResult
from auditor.runs.summary import audit_run_counts
from policies.data_quality import RECORD_KEY
from tests.audit.test_runs import ingest_file, run_inline
from tests.real_data import real_files
from traces.models import Event

pytestmark = pytest.mark.django_db

#: Per source folder: the policies that read it, and the event type its flags are about.
SOURCES = {
    "ldb": (["vrr"], "candidate"),
    "sycon-bench": (["commit", "checklist"], "message"),
    "tau-bench": (["twincheck"], "tool_call"),
    "tau2-bench": (["twincheck"], "tool_call"),
}
FILES = [p for folder in SOURCES for p in real_files(folder, "*.json*")]


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_real_run_s_data_quality_section(client, alice, project, path: Path) -> None:
    policies, read = SOURCES[path.parent.name]
    upload = ingest_file(project, path)
    assert upload.report.get("flags", {}).get("foreign_candidate") is None
    looked_at = Event.objects.filter(trace__project=project, type=read).count()
    assert looked_at > 0  # the rules had something to check
    run = run_inline(project, policies=policies)
    assert run.status == "done" and run.error_count == 0
    got = orjson.loads(orjson.dumps(audit_run_counts(run)))["data_quality"]
    assert got == {"flags": []}
    for policy in policies:
        assert run.summary[policy]["data_quality"] == {}
    assert not AuditResult.objects.filter(run=run, **{f"record__{RECORD_KEY}__isnull": False})
    client.force_login(alice)
    page = client.get(reverse("auditor:run", args=[run.pk])).content.decode()
    assert "import flagged nothing" in page and 'data-table="data-quality"' not in page
