"""Saved views of the traces list and the member's remembered columns: reads scoped to what the
member may see (their own views and the project's shared ones), writes that check the owner.

A view keeps the list's cleaned query string (state.py): applying it opens the list at that
query, so the URL of an applied view is the same URL the view was saved from."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.http import QueryDict

from auditor.trace_list.columns import DEFAULT, parse_columns
from auditor.trace_list.models import ListColumns, SavedView
from auditor.trace_list.state import KEPT

NAME_MAX = 80
VIEWS_PER_MEMBER = 100
# Roles that may share a view with the project (a viewer's views stay their own).
SHARERS = ("owner", "annotator")


class ViewRejected(ValueError):
    """Bad input for a saved view; the message is shown to the user as is."""


def view_list(*, user, project) -> QuerySet[SavedView]:  # type: ignore[no-untyped-def]
    """The member's own views and the project's shared ones."""
    return (
        SavedView.objects.filter(project=project)
        .filter(Q(owner=user) | Q(shared=True))
        .select_related("owner")
        .order_by("name", "id")
    )


def view_get(*, user, project, view_id: int | None) -> SavedView | None:  # type: ignore[no-untyped-def]
    if view_id is None:
        return None
    return view_list(user=user, project=project).filter(pk=view_id).first()


def kept_query(query: str) -> str:
    """Only the list's own parameters of a query string (no page cursor, no view id)."""
    q = QueryDict(query or "", mutable=True)
    for key in list(q.keys()):
        if key not in KEPT:
            del q[key]
    return q.urlencode()


def _name(name: str) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise ViewRejected("a saved view needs a name")
    if len(name) > NAME_MAX:
        raise ViewRejected(f"a view's name has at most {NAME_MAX} characters")
    return name


def _shared(shared: bool, role: str | None) -> bool:
    if shared and role not in SHARERS:
        raise ViewRejected("viewers keep views for themselves; an owner or annotator shares them")
    return shared


def view_create(
    *, project, user, role: str | None, name: str, query: str, shared: bool
) -> SavedView:  # type: ignore[no-untyped-def]
    name = _name(name)
    if SavedView.objects.filter(project=project, owner=user).count() >= VIEWS_PER_MEMBER:
        raise ViewRejected(f"you have {VIEWS_PER_MEMBER} saved views here; delete one first")
    try:
        with transaction.atomic():
            return SavedView.objects.create(
                project=project,
                owner=user,
                name=name,
                query=kept_query(query),
                shared=_shared(shared, role),
            )
    except IntegrityError:
        raise ViewRejected(f"you already have a view named {name!r}; choose another name") from None


def _own(view: SavedView, user) -> None:  # type: ignore[no-untyped-def]
    if view.owner_id != user.pk:
        raise ViewRejected(f"{view.name!r} is {view.owner}'s view; only they change it")


def view_update(*, view: SavedView, user, role: str | None, name: str, shared: bool) -> SavedView:  # type: ignore[no-untyped-def]
    _own(view, user)
    view.name = _name(name)
    view.shared = _shared(shared, role)
    try:
        with transaction.atomic():
            view.save(update_fields=["name", "shared", "updated_at"])
    except IntegrityError:
        raise ViewRejected(f"you already have a view named {view.name!r}") from None
    return view


def view_delete(*, view: SavedView, user, role: str | None) -> None:  # type: ignore[no-untyped-def]
    """Its owner deletes a view; a project owner may delete a shared one too."""
    if view.owner_id != user.pk and not (view.shared and role == "owner"):
        raise ViewRejected(f"{view.name!r} is {view.owner}'s view; only they delete it")
    view.delete()


def columns_remembered(*, user, project) -> tuple[str, ...] | None:  # type: ignore[no-untyped-def]
    row = ListColumns.objects.filter(user=user, project=project).values_list("columns", flat=True)
    cols = row.first()
    if not isinstance(cols, list):
        return None
    return parse_columns([c for c in cols if isinstance(c, str)])


def columns_remember(*, user, project, columns: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    if columns == DEFAULT:
        ListColumns.objects.filter(user=user, project=project).delete()
        return
    ListColumns.objects.update_or_create(
        user=user, project=project, defaults={"columns": list(columns)}
    )
