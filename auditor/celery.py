"""The Celery app. Workers: `celery -A auditor worker -Q ingest,audit,export`."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init

from auditor import broker_patch

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")


@worker_init.connect
def _survive_broker_loss(**_: object) -> None:
    """Before the worker's consumer connects: a Redis outage must not kill the worker
    (auditor/broker_patch.py). Only workers consume, so only they load the patch — it imports
    redis and kombu's Redis transport, a noticeable share of every other process's start
    (manage.py commands, the web tier)."""
    broker_patch.install()


app = Celery("auditor")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
