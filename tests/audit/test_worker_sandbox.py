"""Sandboxed execution of code candidates through a real Celery worker: the
project switch, VRR calibration from executed labels on the real LDB HumanEval file, and a
hostile candidate that ends as its own labelled failure with the worker alive."""

from __future__ import annotations

import math

import pytest
from django.urls import reverse

from auditor.models import AuditRun, Calibration
from auditor.runs.calibration import NO_EXECUTION_LABELS
from auditor.runs.services import audit_run_create
from tests.builders.v1 import jsonl
from tests.conftest import wait_for
from tests.export.conftest import ingest
from tests.real_data import count_records, real_file

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

LDB = real_file("ldb/humaneval_reflexion_gpt-3.5-turbo-0613.jsonl")


def _sandbox_available() -> None:
    from policies.sandbox.process import SandboxSettings, run_program

    res = run_program("print(1)", SandboxSettings(enabled=True))
    if res.status == "unavailable":
        pytest.skip(f"the sandbox needs bubblewrap, libseccomp and user namespaces: {res.detail}")


def _created_by_staff(project, django_user_model) -> None:  # type: ignore[no-untyped-def]
    """Code execution is for projects a staff user created (Project.execution_refusal)."""
    staff = django_user_model.objects.create_user("staff", password="staff-pw", is_staff=True)
    project.created_by = staff
    project.save(update_fields=["created_by"])


#: VRR's minimum of evidence lowered to one labelled transition: the test checks that execution
#: gives the calibration labels to estimate from, whatever the sample's size.
ANY_EVIDENCE = {"vrr": {"min_evidence": 1}}


def _run_vrr(project, timeout: float = 240.0, settings=None) -> AuditRun:  # type: ignore[no-untyped-def]
    run = audit_run_create(project=project, policies=["vrr"], settings=settings)
    wait_for(lambda: AuditRun.objects.get(pk=run.pk).is_finished, timeout=timeout, interval=0.5)
    run.refresh_from_db()
    assert run.status == AuditRun.Status.DONE, run.failure
    return run


def _finite(x) -> bool:  # type: ignore[no-untyped-def]
    return isinstance(x, float) and math.isfinite(x)


def test_ldb_alpha_beta_finite_with_execution_and_not_applicable_without(
    celery_worker_process, project, client, alice, django_user_model
):
    _sandbox_available()
    _created_by_staff(project, django_user_model)
    ingest(project, LDB, "humaneval.jsonl")
    client.force_login(alice)

    off = _run_vrr(project)
    [cal] = Calibration.objects.filter(run=off)
    assert cal.params["params"]["alpha"] is None and cal.params["params"]["beta"] is None
    assert cal.params["not_applicable"] == NO_EXECUTION_LABELS and "execution" not in cal.params
    page = client.get(reverse("auditor:run", args=[off.pk])).content.decode()
    assert f"not applicable: {NO_EXECUTION_LABELS}" in page

    # the owner switches execution on from the project page
    r = client.post(
        reverse("traces:project-sandbox", args=[project.pk]), {"execute_code_candidates": "on"}
    )
    assert r.status_code == 302
    project.refresh_from_db()
    assert project.execute_code_candidates

    on = _run_vrr(project, settings=ANY_EVIDENCE)
    [cal] = Calibration.objects.filter(run=on)
    p, iv = cal.params["params"], cal.params["intervals"]
    assert _finite(p["alpha"]) and _finite(p["beta"]), cal.params["notes"]
    for name in ("alpha", "beta"):
        lo, hi = iv[name]
        assert _finite(lo) and _finite(hi) and lo <= p[name] <= hi
    assert "not_applicable" not in cal.params
    execution = cal.params["execution"]
    assert execution["labelled"] > count_records(LDB) and execution["counts"]["passed"] > 0
    assert execution["counts"]["failed"] > 0 and execution["counts"].get("unavailable", 0) == 0
    # the audit itself read the executed labels: Stop, Guard and fixed-k from them
    table = on.summary["vrr"]["vrr"]
    assert table["label_sources"].get("executed", 0) > 0
    assert table["stop"]["known"] > 0 and table["fixed_k_validity"]["0"]["capped"][
        "known"
    ] == count_records(LDB)
    assert on.summary["vrr"]["not_applicable"] == {}
    page = client.get(reverse("auditor:run", args=[on.pk])).content.decode()
    assert "Paper table: vrr" in page and "VRR-Stop" in page and "candidates labelled" in page

    # a later run executes nothing again: the project keeps its programs' outcomes
    # (auditor.runs.execution_store), and the labels, calibration and verdicts are the same
    again = _run_vrr(project, settings=ANY_EVIDENCE)
    [kept] = Calibration.objects.filter(run=again)
    counts = kept.params["execution"]["counts"]
    assert counts["programs run"] == 0
    assert counts["outcomes reused"] == execution["counts"]["programs run"] > 0
    assert kept.params["execution"]["labels"] == execution["labels"]
    assert (kept.params["params"], kept.params["intervals"]) == (p, iv)
    assert again.summary["vrr"]["overall"] == on.summary["vrr"]["overall"]

    # with the default minimum of evidence, a rate is estimated or says why it is not
    default = _run_vrr(project)
    [cal] = Calibration.objects.filter(run=default)
    p, notes = cal.params["params"], " ".join(cal.params.get("notes") or [])
    for name in ("alpha", "beta"):
        assert _finite(p[name]) or f"{name} not identified" in notes, (name, notes)


def _hostile_loop() -> bytes:
    """One repair loop: round 0 loops forever, round 1 passes the hidden tests."""
    tid = "loop-1"
    bodies = ["def f():\n    while True:\n        pass\n", "def f():\n    return 1\n"]
    events: list[dict] = [
        {
            "trace_id": tid,
            "type": "trace",
            "model": "m",
            "task": {"id": tid, "prompt": "def f():\n    '''Return 1.'''\n", "entry_point": "f"},
            "labels": {"hidden_tests": "def check(candidate):\n    assert candidate() == 1\n"},
        }
    ]
    for k, body in enumerate(bodies):
        cid = f"c{k}"
        events.append(
            {"trace_id": tid, "type": "candidate", "candidate_id": cid, "round": k,
             "content": body}
        )  # fmt: skip
        events.append(
            {"trace_id": tid, "type": "verification", "candidate_id": cid, "round": k,
             "votes": 3, "accepts": 3 * k, "verifier": "tests"}
        )  # fmt: skip
    return jsonl(events)


def test_an_infinite_loop_is_its_candidates_failure_and_the_worker_lives(
    celery_worker_process, project, django_user_model
):
    _sandbox_available()
    _created_by_staff(project, django_user_model)
    ingest(project, _hostile_loop(), "loop.jsonl")
    project.execute_code_candidates = True
    project.save(update_fields=["execute_code_candidates"])
    run = _run_vrr(project, timeout=120)
    [cal] = Calibration.objects.filter(run=run)
    labels = cal.params["execution"]["labels"]["loop-1"]
    assert labels["c0"][0] is False and labels["c0"][1].startswith(("timeout", "failed"))
    assert labels["c1"] == [True, "hidden tests passed"]
    assert celery_worker_process.proc.poll() is None  # the worker is alive …
    again = _run_vrr(project, timeout=120)  # … and still does work
    assert again.status == AuditRun.Status.DONE
