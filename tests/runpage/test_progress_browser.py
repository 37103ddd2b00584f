"""Real Chromium: a long run's page shows traces done / total, the progress bar and the time
left, and keeps polling its status fragment until the run is done."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from auditor.models import AuditRun
from tests.browsing import login, shot, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_running_audit_shows_progress_and_time_left(page, live_server, alice, project, tmp_path):
    # 1,500 of 4,000 traces in the 60 s since it started: 100 s left at that rate.
    run = AuditRun.objects.create(
        project=project, policies=["twincheck", "checklist", "vrr", "commit"],
        status=AuditRun.Status.RUNNING, started_at=timezone.now() - timedelta(seconds=60),
        traces_total=4000, traces_done=1500,
    )  # fmt: skip
    errors = watch(page)
    login(page, live_server, "alice", "alice-pw")
    page.goto(live_server.url + run.get_absolute_url())
    status = page.locator("#status")
    assert "1500 / 4000 traces" in status.inner_text()
    assert page.locator("progress").get_attribute("value") == "38"
    eta = page.locator("#run-eta")
    assert eta.is_visible()
    # 100 s when the page was rendered at once; logging in first adds a few seconds
    m = re.fullmatch(r"about (\d+) s left", eta.inner_text())
    assert m and 100 <= int(m[1]) <= 120, eta.inner_text()
    shot(page, tmp_path, "run-progress.png")
    # the fragment polls: the run finishing replaces the bar and the estimate
    AuditRun.objects.filter(pk=run.pk).update(
        status=AuditRun.Status.DONE, traces_done=4000, finished_at=timezone.now()
    )
    page.locator('#status[data-status="done"]').wait_for(timeout=10_000)
    assert page.locator("#run-eta").count() == 0 and page.locator("progress").count() == 0
    assert not errors
