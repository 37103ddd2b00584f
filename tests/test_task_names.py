"""Celery task names are part of the deployment's contract: messages already queued, and the
queue routes in settings, find a task by name. Moving a module must not rename a task."""

from __future__ import annotations


def test_task_names_and_their_queues_are_stable():
    from auditor.celery import app

    app.loader.import_default_modules()
    names = sorted(t for t in app.tasks if not t.startswith(("celery.", "tests.")))
    queues = {n: app.amqp.router.route({}, n, (), {})["queue"].name for n in names}
    assert queues == {
        "auditor.tasks.audit_chunk": "audit",
        "auditor.tasks.resume_stale_work": "audit",
        "auditor.tasks.start_run": "audit",
        "auditor.tasks_export.build_export": "export",
        "traces.tasks.index_search": "ingest",
        "traces.tasks.process_upload": "ingest",
    }
