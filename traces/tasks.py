"""Celery tasks of ingestion: thin, take ids, call the service."""

from __future__ import annotations

from celery import shared_task
from django.db import DatabaseError, InterfaceError, OperationalError, connection

from traces import search
from traces.models import Upload
from traces.services import upload_process


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=8,
)
def process_upload(self, upload_id: int) -> str:  # type: ignore[no-untyped-def]
    try:
        upload = upload_process(upload_id=upload_id)
    except (OperationalError, InterfaceError) as exc:
        # Transient: the database went away. Drop the dead connection (the next query opens a
        # fresh one) and put the upload back in the queue's hands so the retry can claim it;
        # if the database is still unreachable, the stale-heartbeat rule lets a later retry or
        # the sweep take it over. The partial rows stay invisible and are deleted on the retry.
        connection.close()
        try:
            Upload.objects.filter(pk=upload_id, status=Upload.Status.RUNNING).update(
                status=Upload.Status.PENDING
            )
        except DatabaseError:
            pass
        raise self.retry(exc=exc, countdown=min(5 * 2**self.request.retries, 300)) from exc
    return "skipped" if upload is None else upload.status


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=8)
def index_search(self, upload_id: int) -> int:  # type: ignore[no-untyped-def]
    try:
        return search.index_upload(upload_id)
    except (OperationalError, InterfaceError) as exc:
        connection.close()
        raise self.retry(exc=exc, countdown=min(5 * 2**self.request.retries, 300)) from exc
