"""A project that executes code candidates on a worker without bubblewrap: nothing runs, every
candidate is labelled unknown with the reason, nothing is stored for reuse, and the run page
says why VRR could not be calibrated — never a failure, never a weaker sandbox."""

from __future__ import annotations

import pytest
from django.urls import reverse

from auditor.models import Calibration
from auditor.runs.calibration import executed_labels
from auditor.runs.models import ExecutionResult
from tests.audit.test_worker_sandbox import _hostile_loop
from tests.export.conftest import ingest, run_inline

pytestmark = pytest.mark.django_db


def test_without_bubblewrap_candidates_are_unknown_with_the_reason(
    project, client, alice, django_user_model, monkeypatch
):
    staff = django_user_model.objects.create_user("sam", password="sam-pw", is_staff=True)
    project.created_by = staff
    project.execute_code_candidates = True
    project.save()
    ingest(project, _hostile_loop(), "loop.jsonl")
    monkeypatch.setenv("PATH", "/nonexistent")  # a worker where bubblewrap is not installed
    run = run_inline(project, policies=["vrr"])
    [cal] = Calibration.objects.filter(run=run)
    reason = (
        "sandbox unavailable: bubblewrap (bwrap) not found; install the Debian package bubblewrap"
    )
    execution = cal.params["execution"]
    assert execution["unavailable"] == reason and execution["labelled"] == 0
    assert execution["counts"]["unavailable"] == 2 and execution["counts"]["programs run"] == 2
    assert execution["labels"]["loop-1"] == {"c0": [None, reason], "c1": [None, reason]}
    assert cal.params["not_applicable"] == reason
    labels = executed_labels(run)
    assert {lab.valid for lab in labels.values()} == {None}
    assert not ExecutionResult.objects.filter(project=project).exists()  # nothing to reuse
    client.force_login(alice)
    page = client.get(reverse("auditor:run", args=[run.pk])).content.decode()
    assert f"not applicable: {reason}" in page
