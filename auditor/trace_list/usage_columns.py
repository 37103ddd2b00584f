"""The traces list's duration, tokens and cost: their filters (duration in seconds, cost in US
dollars, whether a cost is known) and the text of their cells. Kept apart from the other
columns so the list's own code changes by a few lines only."""

from __future__ import annotations

from django.db.models import QuerySet

from common.figures import cost_text, duration_text, tokens_text
from traces.models import Trace

FILTERS = ("dur_min", "dur_max", "cost_min", "cost_max", "has_cost")


def _amount(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if 0 <= number < 1e12 else None


def clean(f: dict[str, str]) -> None:
    """Drop values that are not amounts (or yes/no for has_cost): they mean "no filter"."""
    for key in FILTERS[:4]:
        if f.get(key) and _amount(f[key]) is None:
            f[key] = ""
    if f.get("has_cost") not in ("yes", "no"):
        f["has_cost"] = ""


def apply(qs: QuerySet, f: dict[str, str]) -> QuerySet:
    """Narrow by the cleaned filters. A bound excludes traces without the figure: a trace whose
    duration is unknown is not "under 10 s"."""
    bounds = (
        ("dur_min", "duration_ms__gte", 1000.0),
        ("dur_max", "duration_ms__lte", 1000.0),
        ("cost_min", "cost_usd__gte", 1.0),
        ("cost_max", "cost_usd__lte", 1.0),
    )
    for key, lookup, scale in bounds:
        value = _amount(f.get(key, ""))
        if value is not None:
            qs = qs.filter(**{lookup: value * scale})
    if f.get("has_cost") in ("yes", "no"):
        qs = qs.filter(cost_usd__isnull=f["has_cost"] == "no")
    return qs


def cells(trace: Trace) -> dict[str, str]:
    """The three cells' text; "—" where the trace has no such figure."""
    return {
        "duration": duration_text(trace.duration_ms),
        "tokens": tokens_text(trace.total_tokens),
        "cost": cost_text(trace.cost_usd),
    }
