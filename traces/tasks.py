"""Celery tasks of ingestion and search indexing: thin, take ids, call the services."""

from __future__ import annotations

from common.retrying import retrying_task
from traces import search
from traces.models import Upload
from traces.otlp_receiver import tasks as otlp_tasks  # noqa: F401  (registers its task)
from traces.services import upload_process


def _back_to_pending(upload_id: int) -> None:
    """After a transient error, put the upload back in the queue's hands so the retry can claim
    it; if the database is still unreachable, the stale-heartbeat rule lets a later retry or the
    sweep take it over. The partial rows stay invisible and are deleted on the retry."""
    Upload.objects.filter(pk=upload_id, status=Upload.Status.RUNNING).update(
        status=Upload.Status.PENDING
    )


@retrying_task(name="traces.tasks.process_upload", on_transient=_back_to_pending)
def process_upload(upload_id: int) -> str:
    upload = upload_process(upload_id=upload_id)
    return "skipped" if upload is None else upload.status


@retrying_task(name="traces.tasks.index_search")
def index_search(upload_id: int) -> int:
    return search.index_upload(upload_id)
