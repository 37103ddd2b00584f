"""The Celery app. Workers: `celery -A auditor worker -Q ingest,audit,export`."""

from __future__ import annotations

import os

from celery import Celery

from auditor import broker_patch

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")

# Before any connection exists: a Redis outage must not kill the worker (auditor/broker_patch.py).
broker_patch.install()

app = Celery("auditor")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
