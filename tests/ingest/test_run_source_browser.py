"""Real Chromium uploads a real repair run through the page, stating its run (model, label):
the upload page shows the run and the traces carry it."""

from __future__ import annotations

import os

import pytest

from tests.conftest import REPO
from tests.real_data import count_records, real_file
from traces.models import Trace, Upload

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]

HUMANEVAL = real_file("ldb/humaneval_reflexion_gpt-3.5-turbo-0613.jsonl")
# TA_DOCS_SCREENSHOTS=1 writes the screenshots to docs/screenshots (for the docs).
DOCS = REPO / "docs" / "screenshots"


def test_upload_page_takes_the_run_and_shows_it(
    page, live_server, celery_worker_process, project, alice, tmp_path
):
    shots = DOCS if os.environ.get("TA_DOCS_SCREENSHOTS") == "1" else tmp_path
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-pw")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/projects/{project.pk}/upload/")
    page.set_input_files("#file", str(HUMANEVAL))
    page.fill("#run_model", "gpt-3.5-turbo")
    page.fill("#run_label", "seed-1")
    page.screenshot(path=str(shots / "upload-run.png"), full_page=True)
    page.click("#submit")
    page.wait_for_url("**/uploads/*/")
    page.wait_for_selector("#status[data-status=done]", timeout=120_000)
    run = page.inner_text("#run-source")
    assert "gpt-3.5-turbo" in run and "seed-1" in run and "reflexion" in run
    assert page.inner_text("#traces-accepted") == str(count_records(HUMANEVAL))
    upload = Upload.objects.get(project=project)
    assert (upload.run_model, upload.run_agent, upload.run_label) == (
        "gpt-3.5-turbo",
        "reflexion",
        "seed-1",
    )
    assert Trace.objects.filter(
        upload=upload, run_label="seed-1", model="gpt-3.5-turbo"
    ).count() == count_records(HUMANEVAL)
    assert errors == [], errors
    page.screenshot(path=str(shots / "upload-run-done.png"), full_page=True)


def test_a_final_solution_file_says_on_the_page_what_it_lacks(
    page, live_server, celery_worker_process, project, alice, tmp_path
):
    import orjson

    shots = DOCS if os.environ.get("TA_DOCS_SCREENSHOTS") == "1" else tmp_path
    drop = {"implementations", "test_feedback", "given_tests", "is_passing"}
    lines = [
        orjson.dumps({k: v for k, v in orjson.loads(x).items() if k not in drop})
        for x in HUMANEVAL.read_bytes().splitlines()
    ]
    path = tmp_path / "humaneval_reflexion_gpt-4.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-pw")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/projects/{project.pk}/upload/")
    page.set_input_files("#file", str(path))
    page.click("#submit")
    page.wait_for_url("**/uploads/*/")
    page.wait_for_selector("#status[data-status=done]", timeout=120_000)
    assert page.inner_text("#traces-accepted") == str(count_records(HUMANEVAL))
    note = page.inner_text("#import-note")
    assert "only its final `solution`" in note and "no verification events" in note
    assert "model gpt-4" in page.inner_text("#run-source")
    page.screenshot(path=str(shots / "upload-final-solution-note.png"), full_page=True)
