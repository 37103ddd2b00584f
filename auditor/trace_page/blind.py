"""Blindness on the trace page: an annotator holding an annotation item on one of this trace's
audit results does not see the trace's decision details (they name actor and twin, and the
policies' verdicts) until they give their verdict, skip it or their claim lapses.

The item model is reached through the audit result's reverse relation: the trace page and
annotation are sibling apps and do not import each other."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from auditor.runs.models import AuditResult
from traces import selectors as trace_selectors
from traces.models import Trace


def held_item(*, user, trace: Trace, role: str | None = None) -> Any | None:  # type: ignore[no-untyped-def]
    """The open annotation item on this trace that the user holds a live claim on and has not
    answered, or None. Owners are not kept out: they adjudicate, and the queue page shows them
    who chose actor or twin anyway. `role`: the user's role in the project, when known."""
    if not getattr(user, "is_authenticated", False) or getattr(user, "project", None):
        return None
    if (role or trace_selectors.role_of(user=user, project=trace.project)) == "owner":
        return None
    item_model = AuditResult._meta.get_field("annotation_items").related_model
    return (
        item_model.objects.filter(
            result__trace=trace,
            claimed_by=user,
            status="open",
            lease_until__gt=timezone.now(),
        )
        .exclude(verdicts__annotator=user)
        .select_related("queue")
        .order_by("id")
        .first()
    )
