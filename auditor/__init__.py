"""The project's Django app. Its Celery app (`auditor.celery`) loads on first use, not here: every
process imports this package at Django start, and Celery with kombu is a large share of it that
a `manage.py` command auditing inline, or a web request that queues nothing, never uses.
Whatever queues or defines a task loads it first (`common.retrying.retrying_task`, the task
modules); `celery -A auditor` finds `auditor.celery.app` itself."""

from __future__ import annotations

from typing import Any

__all__ = ["celery_app"]


def __getattr__(name: str) -> Any:
    if name == "celery_app":
        from .celery import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
