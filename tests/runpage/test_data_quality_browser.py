"""Real Chromium: the run page's data-quality card for an upload of a v3 BFCL result file —
one task scored against its release's ground truth, one whose ground truth changed between the
v3 releases (unknown, with the reason) — and a LATS log with a foreign candidate."""

from __future__ import annotations

import io
import json
import os

import orjson
import pytest

from tests.audit.test_runs import run_inline
from tests.browsing import DOCS, login, watch
from tests.importers.test_bfcl_release import SAME_TURNS_OTHER_TRUTH, TRUTH_CHANGED_IN_V3, v3_run
from tests.policies.test_repair_candidates import STRLEN, lats_record
from traces.services import upload_create, upload_process

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _upload(project, data: bytes, name: str) -> None:  # type: ignore[no-untyped-def]
    up, _ = upload_create(
        project=project, fileobj=io.BytesIO(data), filename=name, source="cli", enqueue=False
    )
    assert upload_process(upload_id=up.pk).status == "done"


def test_the_data_quality_card(page, live_server, alice, project, tmp_path):  # type: ignore[no-untyped-def]
    pytest.importorskip("bfcl_eval")
    scored, _ = v3_run(SAME_TURNS_OTHER_TRUTH)
    changed, _ = v3_run(TRUTH_CHANGED_IN_V3)
    bfcl = orjson.dumps(scored) + b"\n" + orjson.dumps(changed) + b"\n"
    _upload(project, bfcl, "BFCL_v3_multi_turn_base_result.json")
    _upload(project, json.dumps(lats_record(STRLEN)).encode() + b"\n", "lats_gpt-4.jsonl")
    run = run_inline(project, policies=["twincheck", "vrr"])
    assert run.status == "done"
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(live_server.url + run.get_absolute_url())
    card = page.locator("#data-quality")
    rows = card.locator("tr[data-flag]")
    flags = [rows.nth(i).get_attribute("data-flag") for i in range(rows.count())]
    assert flags == ["foreign_candidate", "recorded_release_differs", "ground_truth_changed"]
    changed_row = card.locator('tr[data-flag="ground_truth_changed"]')
    assert changed_row.locator('[data-policy="twincheck"][data-k="unknown"]').inner_text() == "1"
    assert "ground truth changed since the run's release (1)" in card.inner_text()
    card.scroll_into_view_if_needed()
    target = DOCS if os.environ.get("TA_DOCS_SCREENSHOTS") == "1" else tmp_path
    card.screenshot(path=str(target / "run-data-quality.png"))
    assert not errors
