from django.apps import AppConfig


class AuditorConfig(AppConfig):
    name = "auditor"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from traces.signals import upload_done

        upload_done.connect(_queue_search_index, dispatch_uid="auditor-search-index")


def _queue_search_index(sender, upload_id: int, **kwargs) -> None:  # type: ignore[no-untyped-def]
    """Index a finished upload for full-text search, in a task of its own so ingest stays fast.
    Only PostgreSQL has a search table; SQLite searches the payloads directly."""
    from django.db import connection, transaction

    if connection.vendor != "postgresql":
        return

    def enqueue() -> None:
        from auditor.tasks import index_search

        try:
            index_search.delay(upload_id)
        except Exception:  # noqa: BLE001 — the broker is down; the sweep indexes it later
            import logging

            logging.getLogger(__name__).warning(
                "could not queue search indexing of %s", upload_id, exc_info=True
            )

    transaction.on_commit(enqueue, robust=True)
