"""manage.py trace_totals — recompute every trace's duration, tokens and cost from its stored
events (traces.totals). Migration 0016 does this once; run it again after changing how the
figures are computed."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from traces.models import Event, Trace
from traces.totals_backfill import totals_backfill


class Command(BaseCommand):
    help = "Recompute the duration, tokens and cost of every trace from its events."

    def handle(self, *args: Any, **options: Any) -> None:
        filled = totals_backfill(Trace, Event)
        self.stdout.write(f"{filled} traces carry a duration, tokens or cost")
