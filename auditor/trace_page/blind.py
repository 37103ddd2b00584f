"""Blindness on the trace page (the rules are `auditor.runs.blindness`'s): an annotator sees
none of a trace's decision details, and no timeline of a trace while an open pair item on it
may still be given to them (`hides_timeline`).

The held item itself is shown (which queue, what to do): it is found through the audit result's
reverse relation, as the trace page and annotation are sibling apps."""

from __future__ import annotations

from typing import Any

from django.db.models import Case, IntegerField, Q, Value, When
from django.utils import timezone

from auditor.runs import blindness
from traces.models import Trace


def held_item(*, user, trace: Trace, role: str | None = None) -> Any | None:  # type: ignore[no-untyped-def]
    """The open annotation item on this trace that the annotator may still be asked to judge
    (the one they hold a live claim on first), or None. Only the annotator role is kept out:
    owners adjudicate, and the queue page shows them who chose actor or twin anyway; viewers
    give no verdicts. `role`: the user's role in the project, when known (people only: a
    project token is never kept out, as `blindness.is_annotator` says)."""
    if role is not None and role != blindness.ANNOTATOR:
        return None
    if not blindness.is_annotator(user=user, project=trace.project):
        return None
    mine = Q(claimed_by=user, lease_until__gt=timezone.now())
    return (
        blindness.open_items(user=user)
        .filter(result__trace=trace)
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
