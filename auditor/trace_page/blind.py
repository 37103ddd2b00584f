"""Blindness on the trace page: an annotator does not see a trace's decision details (they name
actor and twin, and the policies' verdicts) while an annotation item on one of its audit results
is open for them — open, short of its k verdicts, and not yet answered or skipped by them —
whether or not they hold it right now: a look before claiming would unblind the item as surely
as a look during it. For a pair the timeline is kept back too (`hides_timeline`): the recorded
trajectory holds the agent's call.

The item model is reached through the audit result's reverse relation: the trace page and
annotation are sibling apps and do not import each other."""

from __future__ import annotations

from typing import Any

from django.db.models import Case, F, IntegerField, Q, Value, When
from django.utils import timezone

from auditor.runs.models import AuditResult
from traces import selectors as trace_selectors
from traces.models import Trace


def held_item(*, user, trace: Trace, role: str | None = None) -> Any | None:  # type: ignore[no-untyped-def]
    """The open annotation item on this trace that the annotator may still be asked to judge
    (the one they hold a live claim on first), or None. Only the annotator role is kept out:
    owners adjudicate, and the queue page shows them who chose actor or twin anyway; viewers
    give no verdicts. `role`: the user's role in the project, when known."""
    if not getattr(user, "is_authenticated", False) or getattr(user, "project", None):
        return None
    if (role or trace_selectors.role_of(user=user, project=trace.project)) != "annotator":
        return None
    item_model = AuditResult._meta.get_field("annotation_items").related_model
    mine = Q(claimed_by=user, lease_until__gt=timezone.now())
    return (
        item_model.objects.filter(
            result__trace=trace, status="open", verdicts_count__lt=F("queue__k")
        )
        .exclude(verdicts__annotator=user)
        .select_related("queue")
        .order_by(
            Case(When(mine, then=Value(0)), default=Value(1), output_field=IntegerField()), "id"
        )
        .first()
    )


def hides_timeline(item: Any | None) -> bool:
    """Whether the item also keeps the trace's timeline from its annotator: a pair's recorded
    trajectory holds the agent's call at the decision point, so the timeline alone would tell
    which of A and B is the agent's. Other kinds ask about outcomes the timeline does not
    decide."""
    return item is not None and getattr(item, "kind", "") == "pair"
