"""The Celery app. Workers: `celery -A auditor worker -Q ingest,audit,export`."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")

app = Celery("auditor")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
