"""What the annotator role is kept from, so that every verdict is blind.

Two rules, the same on every page, API and export:

- The audit's decisions (per-trace transitions, actor and guarded outcomes, which policy
  applied, the decision records) are not shown to the annotator role at all (`sees_decisions`),
  on any trace: an outcome item asks what the audit could not settle, and a pair names actor
  and twin in its decision. A rule per trace would leak through its own exceptions (the traces
  a filter stops matching are the ones with an item), and annotators need none of it to judge.
- A trace's recorded content (its timeline, its events, content search over them) is kept from
  an annotator while an open pair item on that trace may still be given to them
  (`pair_blind_traces`): the recorded trajectory holds the agent's call at the decision point,
  so it alone would tell which of A and B is the agent's. Other item kinds ask about outcomes
  the content does not decide, so their traces stay readable.

An item "may still be given" to an annotator when it is open, short of its k verdicts, and not
yet answered or skipped by them, whether or not they hold it now: a look before claiming would
unblind it as surely as a look during it. Owners adjudicate (the queue page shows them who chose
actor or twin anyway) and viewers give no verdicts, so both see everything.

Runs sit below annotation in the app layers, so the item model is reached through the audit
result's reverse relation rather than imported."""

from __future__ import annotations

from typing import Any

from django.db.models import F, QuerySet

from auditor.runs.models import AuditResult
from traces import selectors as trace_selectors
from traces.models import Project

ANNOTATOR = "annotator"


def is_annotator(*, user, project: Project) -> bool:  # type: ignore[no-untyped-def]
    """A person (not a project token) whose role in the project is annotator."""
    if not getattr(user, "is_authenticated", False) or getattr(user, "project", None):
        return False
    return trace_selectors.role_of(user=user, project=project) == ANNOTATOR


def sees_decisions(*, user, project: Project) -> bool:  # type: ignore[no-untyped-def]
    """Whether the caller may see the audit's per-trace decisions in this project."""
    return not is_annotator(user=user, project=project)


def item_model() -> Any:
    return AuditResult._meta.get_field("annotation_items").related_model


def open_items(*, user) -> QuerySet:  # type: ignore[no-untyped-def]
    """Annotation items that may still be given to this user (any project)."""
    return (
        item_model()
        .objects.filter(status="open", verdicts_count__lt=F("queue__k"))
        .exclude(verdicts__annotator=user)
    )


def pair_blind_traces(*, user, project: Project) -> QuerySet | None:  # type: ignore[no-untyped-def]
    """Ids of the project's traces whose content is kept from this annotator (a subquery), or
    None when nothing is kept from the caller (not an annotator)."""
    if not is_annotator(user=user, project=project):
        return None
    return (
        open_items(user=user)
        .filter(kind="pair", result__trace__project=project)
        .values("result__trace_id")
    )
