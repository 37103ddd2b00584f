"""An audit run on a LATS-shaped repair log (another task's program as implementation 0): the
foreign candidate is no round, and the run summary, `audit --json` and the run page show how
the VRR verdicts change with Guard's margin δ."""

from __future__ import annotations

import io
import json

import pytest
from django.urls import reverse

from auditor.models import AuditResult
from auditor.runs.calibration import rate_bounds
from auditor.runs.summary import audit_run_counts
from policies.repair_candidates import FOREIGN_CANDIDATE
from policies.settings import build_settings
from policies.vrr import VrrParams, VrrSettings
from policies.vrr.sensitivity import MARGINS
from tests.audit.test_runs import run_inline
from tests.policies.test_repair_candidates import STRLEN, lats_record
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db


def ingest_lats(project, n: int = 4) -> None:  # type: ignore[no-untyped-def]
    lines = []
    for i in range(n):
        rec = lats_record(STRLEN)
        rec["name"] = f"HumanEval_{89 + i}_encrypt"
        lines.append(json.dumps(rec))
    fh = io.BytesIO(("\n".join(lines) + "\n").encode())
    upload, _ = upload_create(
        project=project,
        fileobj=fh,
        filename="humaneval-py._mcts_8_gpt-4_pass_at_k_1_py.jsonl",
        source="cli",
        enqueue=False,
    )
    upload = upload_process(upload_id=upload.pk)
    assert upload.status == "done" and upload.error_count == 0, upload.errors[:3]


def test_a_lats_run_drops_foreign_candidates_and_shows_the_delta_table(client, alice, project):
    ingest_lats(project)
    run = run_inline(
        project, policies=["vrr"], environment="none", settings={"vrr": {"mode": "guard"}}
    )
    assert run.status == "done" and run.error_count == 0
    for res in AuditResult.objects.filter(run=run, policy="vrr"):
        assert res.record["data_quality"] == {FOREIGN_CANDIDATE: ["c0"]}
        assert res.record["n_rounds"] == 2 and res.record["round_votes"] == [[0, 2], [2, 2]]
    table = audit_run_counts(run)["policies"]["vrr"]["paper_table"]["delta_sensitivity"]
    assert set(table) == set(MARGINS)
    assert all(sum(c.values()) == 4 for c in table.values())
    client.force_login(alice)
    page = client.get(reverse("auditor:run", args=[run.pk])).content.decode()
    assert 'id="vrr-delta-sensitivity"' in page and "ceil(0.6n)" in page


def test_the_stored_calibration_gives_the_rate_bounds() -> None:
    got = rate_bounds({"intervals": {"alpha": [0.1, 0.3], "beta": [None, None]}})
    assert got == {
        "rate_lower": {"alpha": 0.1, "beta": None},
        "rate_upper": {"alpha": 0.3, "beta": None},
    }
    settings = build_settings(
        VrrSettings, {"params": VrrParams(0.1, 0.1, 0.2, 0.2, 0.5).to_dict(), **got}
    )
    assert settings.rate_bounds() == {"alpha": (0.1, 0.3)}
