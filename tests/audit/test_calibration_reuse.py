"""A run copies an earlier run's VRR calibration when what it is computed from is the same: the
loops (by trace id), the bootstrap's size and the calibration's code; anything else calibrates
anew (auditor.runs.calibration_cache). On the real LDB repair loops."""

from __future__ import annotations

from typing import Any

import pytest

from auditor.models import AuditRun, Calibration
from auditor.runs import calibration_cache, queueing, services
from auditor.runs.calibration_cache import calibration_inputs, code_digest
from auditor.runs.services import audit_run_create, audit_run_start
from tests.audit.test_early_chunks import results
from tests.audit.test_runs import LDB, ingest_file, run_inline

pytestmark = pytest.mark.django_db

CALIBRATION = ("model", "verifier", "traces", "observations", "params")


def calibrations(run: AuditRun) -> list[dict[str, Any]]:
    return list(
        Calibration.objects.filter(run=run).order_by("model", "verifier").values(*CALIBRATION)
    )


def reused_from(run: AuditRun) -> int | None:
    run.refresh_from_db()
    return run.timings.get("calibration_from")


def test_a_run_of_the_same_loops_copies_the_calibration_and_decides_the_same(project):
    ingest_file(project, LDB)
    first = run_inline(project, environment="none")
    [cal] = Calibration.objects.filter(run=first)
    assert len(cal.inputs) == 64 and reused_from(first) is None
    second = run_inline(project, environment="none", policies=["vrr"])
    assert reused_from(second) == first.pk and second.status == "done"
    assert calibrations(second) == calibrations(first)
    assert Calibration.objects.get(run=second).inputs == cal.inputs
    # its verdicts are those of a run that calibrated (VRR's records name the parameters)
    vrr = {k: v for k, v in results(first).items() if k[1] == "vrr"}
    assert results(second) == vrr
    # a third run copies from the latest run with those inputs
    assert reused_from(run_inline(project, environment="none", policies=["vrr"])) == second.pk


def test_the_run_page_says_where_a_copied_calibration_comes_from(client, alice, project):
    from django.urls import reverse

    ingest_file(project, LDB)
    first = run_inline(project, environment="none", policies=["vrr"])
    second = run_inline(project, environment="none", policies=["vrr"])
    client.force_login(alice)
    own = client.get(reverse("auditor:run", args=[first.pk])).content.decode()
    copied = client.get(reverse("auditor:run", args=[second.pk])).content.decode()
    assert 'id="calibrations"' in own and 'id="calibration-from"' not in own
    link = f'href="{reverse("auditor:run", args=[first.pk])}">run #{first.pk}</a>'
    assert 'id="calibration-from"' in copied and link in copied


def test_other_loops_another_bootstrap_or_other_code_calibrate_anew(
    project, settings, monkeypatch, tmp_path
):
    lines = LDB.read_bytes().splitlines(keepends=True)
    halves = []
    for name, part in (("first.jsonl", lines[:80]), ("second.jsonl", lines[80:])):
        (tmp_path / name).write_bytes(b"".join(part))
        halves.append(ingest_file(project, tmp_path / name))

    def run(**filters: Any) -> AuditRun:
        return run_inline(project, environment="none", policies=["vrr"], trace_filter=filters)

    a = run(upload=halves[0].pk)
    b = run(upload=halves[1].pk)
    assert reused_from(a) is None and reused_from(b) is None
    assert Calibration.objects.get(run=a).inputs != Calibration.objects.get(run=b).inputs
    both = run()
    assert reused_from(both) is None and Calibration.objects.get(run=both).traces == 164
    assert reused_from(run(upload=halves[0].pk)) == a.pk
    settings.TA_CALIBRATION_BOOTSTRAP = 50
    assert reused_from(run()) is None
    monkeypatch.setattr(calibration_cache, "code_digest", lambda: "the parser changed")
    assert reused_from(run()) is None
    settings.TA_CALIBRATION_REUSE = False
    off = run()
    assert reused_from(off) is None and Calibration.objects.get(run=off).inputs == ""


def test_projects_that_execute_code_candidates_do_not_reuse(project, settings):
    settings.TA_SANDBOX_ALLOW_ALL_PROJECTS = True  # the operator allows any project execution
    run = audit_run_create(project=project, environment="none", enqueue=False)
    assert calibration_inputs(run, [1, 2, 3]) != ""
    assert calibration_inputs(run, []) == ""  # nothing to calibrate
    project.execute_code_candidates = True
    project.save()
    run.refresh_from_db()
    assert calibration_inputs(run, [1, 2, 3]) == ""


def test_the_code_digest_covers_the_policies_and_the_calibration_modules():
    assert len(code_digest()) == 64 and code_digest() == code_digest()
    # the files it reads: every policies module and this package's calibration modules
    own = {f"auditor/runs/{name}" for name in calibration_cache._OWN_MODULES}
    assert own <= calibration_cache.digested_files()
    assert "policies/vrr_calibration.py" in calibration_cache.digested_files()
    assert "policies/trace.py" in calibration_cache.digested_files()


@pytest.mark.django_db(transaction=True)
def test_a_calibration_tallied_in_parallel_parts_is_reused_too(project, monkeypatch):
    ingest_file(project, LDB)
    monkeypatch.setattr(queueing, "PART_LOOPS", 40)  # 164 loops: four parts
    monkeypatch.setattr(services, "enqueue_parts", lambda *args: None)
    monkeypatch.setattr(services, "queue_later", lambda *args: None)
    tallies: list[tuple[list[int], str]] = []
    monkeypatch.setattr(
        services,
        "enqueue_tallies",
        lambda run, parts, inputs: tallies.extend((list(p), inputs) for p in parts),
    )
    run = audit_run_create(project=project, environment="none", enqueue=False)
    audit_run_start(run_id=run.pk)
    assert len(tallies) == 4 and len({inputs for _, inputs in tallies}) == 1
    for index, (part, inputs) in enumerate(tallies):
        services.audit_run_tally_part(
            run_id=run.pk, index=index, parts=4, trace_ids=part, inputs=inputs
        )
    [cal] = Calibration.objects.filter(run=run)
    assert cal.inputs == tallies[0][1]
    again = run_inline(project, environment="none", policies=["vrr"])
    assert reused_from(again) == run.pk and calibrations(again) == calibrations(run)
