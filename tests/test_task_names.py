"""Celery task names are part of the deployment's contract: messages already queued, and the
queue routes in settings, find a task by name. Moving a module must not rename a task."""

from __future__ import annotations

import pytest


# Loading the task modules runs Celery's Django fix-up, whose system checks ask a SQLite database
# whether it supports JSON: a query.
@pytest.mark.django_db
def test_task_names_and_their_queues_are_stable():
    from auditor.celery import app

    app.loader.import_default_modules()
    names = sorted(t for t in app.tasks if not t.startswith(("celery.", "tests.")))
    queues = {n: app.amqp.router.route({}, n, (), {})["queue"].name for n in names}
    assert queues == {
        "auditor.tasks.audit_chunk": "audit",
        "auditor.tasks.calibrate_run": "audit",
        "auditor.tasks.resume_stale_work": "audit",
        "auditor.tasks.start_run": "audit",
        "auditor.tasks_export.build_export": "export",
        "traces.tasks.index_search": "ingest",
        "traces.tasks.otlp_finish_traces": "ingest",
        "traces.tasks.process_upload": "ingest",
    }


def test_the_app_loads_on_first_use_and_every_task_goes_to_it():
    """Django start imports neither Celery nor numpy (an inline `manage.py audit` uses
    neither); importing a task module loads the project's app, which every thread then sends to
    (not Celery's unconfigured fallback app), and `celery -A auditor` still finds it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = """
import sys, threading
import django
django.setup()
print(sorted(m for m in ("celery", "kombu", "numpy") if m in sys.modules))
from traces.tasks import process_upload
seen = []
t = threading.Thread(target=lambda: seen.append(process_upload.app.main))
t.start(); t.join()
import auditor
from celery.app.utils import find_app
print(seen, process_upload.app is auditor.celery_app, find_app("auditor") is auditor.celery_app)
"""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "auditor.settings"}
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["[]", "['auditor'] True True"]
