"""Real Chromium: runs of two models of one benchmark uploaded without naming either land as
separate runs; one is renamed, the other processed again with another format, then the first
is deleted after a confirmation naming what goes — the other run is untouched."""

from __future__ import annotations

import os

import pytest

from tests.conftest import REPO
from traces.models import Trace, Upload

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]

SYCON = REPO.parent / "shared" / "data" / "sycon-bench"
# TA_DOCS_SCREENSHOTS=1 writes the screenshots to docs/screenshots (for the docs).
DOCS = REPO / "docs" / "screenshots"


def _upload(page, url: str, path) -> int:  # type: ignore[no-untyped-def]
    page.goto(url)
    page.set_input_files("#file", str(path))
    page.click("#submit")
    page.wait_for_url("**/uploads/*/")
    page.wait_for_selector("#status[data-status=done]", timeout=120_000)
    page.reload()
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def test_two_unnamed_runs_rename_reprocess_delete(
    page, live_server, celery_worker_process, project, alice, tmp_path
):
    shots = DOCS if os.environ.get("TA_DOCS_SCREENSHOTS") == "1" else tmp_path
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    files = []
    for model in ("claude", "gpt-4o"):
        src = SYCON / f"false_presuppositions_{model}_prompt0.jsonl"
        path = tmp_path / src.name
        path.write_bytes(b"\n".join(src.read_bytes().splitlines()[:12]) + b"\n")
        files.append(path)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-pw")
    page.click("button[type=submit]")
    new = f"{live_server.url}/projects/{project.pk}/upload/"
    a = _upload(page, new, files[0])
    assert page.inner_text("#run-sources").endswith("claude")
    b = _upload(page, new, files[1])
    assert page.inner_text("#run-sources").endswith("gpt-4o")
    assert Trace.objects.filter(upload_id=a).count() == Trace.objects.filter(upload_id=b).count()

    # Rename the first run: its traces follow.
    page.goto(f"{live_server.url}/uploads/{a}/")
    page.click("#rename-run summary")
    page.fill("#rename-run input[name=run_label]", "night")
    page.screenshot(path=str(shots / "upload-manage.png"), full_page=True)
    page.click("#rename-submit")
    page.wait_for_selector("#run-sources")
    assert "claude/night" in page.inner_text("#run-sources")
    assert set(Trace.objects.filter(upload_id=a).values_list("run_source", flat=True)) == {
        "claude/night"
    }

    # Process the second again with the format named instead of detected.
    page.goto(f"{live_server.url}/uploads/{b}/")
    page.click("#reprocess summary")
    page.select_option("#reprocess select[name=format]", "pushback")
    page.click("#reprocess-submit")
    page.wait_for_selector("#status[data-status=done]", timeout=120_000)
    upload_b = Upload.objects.get(pk=b)
    assert (upload_b.format_requested, upload_b.traces_accepted) == ("pushback", 12)

    # Delete the first: the confirmation names what goes; the second run stays whole.
    page.goto(f"{live_server.url}/uploads/{a}/")
    page.click("#delete-upload")
    goes = page.inner_text("#delete-goes")
    page.screenshot(path=str(shots / "upload-delete-confirm.png"), full_page=True)
    assert "12 traces" in goes and "events" in goes
    page.click("#delete-submit")
    page.wait_for_load_state()
    assert not Upload.objects.filter(pk=a).exists()
    assert not Trace.objects.filter(upload_id=a).exists()
    assert Trace.objects.filter(upload_id=b).count() == 12
    assert errors == [], errors
