"""One decorator for the project's Celery tasks: late acknowledgement, and transient database
errors retried with exponential backoff.

Permanent errors (bad data) are the services' business: they become a visible state (a failed
upload, an error item) and are never retried. Transient ones — the database went away — can
succeed on retry: the dead connection is dropped (the next query opens a fresh one), an optional
hook puts the job back in the queue's hands, and the task runs again after 5 s, 10 s, 20 s … at
most 300 s, up to 8 times. Every task is idempotent, so a retry only does what is left.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection

TRANSIENT = (OperationalError, InterfaceError)
MAX_RETRIES = 8


def backoff(retries: int) -> int:
    """Seconds before retry number `retries` + 1."""
    return int(min(5 * 2**retries, 300))


def retrying_task(
    *, name: str, on_transient: Callable[..., Any] | None = None
) -> Callable[[Callable[..., Any]], Any]:
    """Make `fn(*ids)` a Celery task named `name` (names are explicit so moving a module never
    orphans queued messages). `on_transient(*ids)` runs after a transient error, before the
    retry; a database error inside it is ignored (the database is the thing that is down)."""

    # The project's Celery app loads on first use (auditor/__init__.py), and a task is queued
    # only after its module is imported: loading the app here makes it the one every queued
    # task goes to. Named by a setting: common sits below the app and may not import it.
    import_module(settings.TA_CELERY_APP)

    def decorate(fn: Callable[..., Any]) -> Any:
        def run(self: Any, *args: Any) -> Any:
            try:
                return fn(*args)
            except TRANSIENT as exc:
                connection.close()
                if on_transient is not None:
                    try:
                        on_transient(*args)
                    except DatabaseError:
                        pass
                raise self.retry(exc=exc, countdown=backoff(self.request.retries)) from exc

        # Not functools.wraps: Celery reads the call signature from the function it is given
        # (and __wrapped__ would make it the undecorated one, without `self`).
        run.__name__ = fn.__name__
        run.__qualname__ = fn.__qualname__
        run.__doc__ = fn.__doc__
        run.__module__ = fn.__module__
        return shared_task(
            name=name,
            bind=True,
            acks_late=True,
            reject_on_worker_lost=True,
            max_retries=MAX_RETRIES,
        )(run)

    return decorate
