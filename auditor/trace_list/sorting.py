"""Sorting the traces list by a column, still with keyset pages: the order is (column, id) and
the cursor stays the id of the last (or first) row seen — its column value is read back with one
indexed lookup — so a sorted page 1,000 costs what page 1 does, like the default order."""

from __future__ import annotations

from django.db.models import BigIntegerField, F, FloatField, Q, QuerySet, Value
from django.db.models.functions import Coalesce

from auditor.trace_list.columns import SORTS
from auditor.trace_list.selectors import PAGE_SIZE

__all__ = ["SORTS", "parse_sort", "sorted_page"]

# Fields a trace may lack (null): sorted by the value with nulls standing in as past the end in
# either direction, so the keyset stays one comparison and traces without the figure come last.
NULLABLE = {
    "duration_ms": (FloatField(), 1e300),
    "total_tokens": (BigIntegerField(), 2**62),
    "cost_usd": (FloatField(), 1e300),
}


def parse_sort(value: str) -> tuple[str, bool] | None:
    """'model' → ('model', False), '-events' → ('events', True); unknown → None. The column
    names and the fields they sort by are the registry's (columns.py)."""
    desc = value.startswith("-")
    name = value[1:] if desc else value
    return (name, desc) if name in SORTS else None


def _beyond(field: str, value: object, pk: int, forward: bool) -> Q:
    """Rows after (forward) or before the cursor in ascending (field, id) order. Written as a
    range on the field narrowed by an OR (field >= v AND (field > v OR id > pk)), not as the
    bare OR: the planner takes the range into the field's index, where the OR alone leaves it a
    filter over every row walked."""
    if forward:
        return Q(**{f"{field}__gte": value}) & (Q(**{f"{field}__gt": value}) | Q(id__gt=pk))
    return Q(**{f"{field}__lte": value}) & (Q(**{f"{field}__lt": value}) | Q(id__lt=pk))


def sorted_page(
    qs: QuerySet, *, name: str, desc: bool, after: int | None = None, before: int | None = None
) -> dict:
    field = SORTS[name]
    if field in NULLABLE:
        output, top = NULLABLE[field]
        last = Value(-1 if desc else top, output_field=output)
        qs = qs.annotate(sort_value=Coalesce(F(field), last, output_field=output))
        field = "sort_value"
    asc_order, desc_order = [field, "id"], [f"-{field}", "-id"]
    order = desc_order if desc else asc_order
    reverse = asc_order if desc else desc_order
    cursor = after if after is not None else before
    value = qs.filter(id=cursor).values_list(field, flat=True).first() if cursor else None
    if cursor is not None and value is None:  # a stale cursor (filters changed): first page
        after = before = None
    if before is not None:
        # going back: the rows just before the cursor in display order, read in reverse
        rows = list(
            qs.filter(_beyond(field, value, before, desc)).order_by(*reverse)[: PAGE_SIZE + 1]
        )
        more_newer = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE][::-1]
        more_older = True
    else:
        base = qs.filter(_beyond(field, value, after, not desc)) if after is not None else qs
        rows = list(base.order_by(*order)[: PAGE_SIZE + 1])
        more_older = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        more_newer = after is not None
    return {
        "rows": rows,
        "next_after": rows[-1].pk if more_older and rows else None,
        "prev_before": rows[0].pk if more_newer and rows else None,
    }
