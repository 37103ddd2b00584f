"""Read-side queries of the traces list: filters over trace columns and one run's audit results,
full-text search, keyset pagination, capped counts, filter choices and per-trace badges."""

from __future__ import annotations

import datetime

from django.core.cache import cache
from django.db.models import Count, Exists, Max, OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KT

from auditor.runs.models import AuditResult, AuditRun
from auditor.trace_notes import selectors as note_selectors
from traces import search
from traces.models import Trace, Upload

OUTCOMES = {"success": True, "failure": False}
NO_CATEGORY = "—"  # how run summaries name the empty category
PAGE_SIZE = 50


def _tri(value: str | None) -> bool | None | str:
    """'success' → True, 'failure' → False, 'unknown' → None; anything else → '' (no filter)."""
    if value in OUTCOMES:
        return OUTCOMES[value]
    return None if value == "unknown" else ""


def trace_filter_apply(
    qs: QuerySet,
    *,
    run: AuditRun | None,
    f: dict[str, str],
    since: datetime.datetime | None = None,
    until: datetime.datetime | None = None,
) -> QuerySet:
    """Narrow a scoped trace queryset by the list's filters (already-validated strings) and
    the creation range [since, until).

    Audit filters become one correlated EXISTS over the run's results, so every condition
    holds for the same (trace, policy) decision, and the trace rows are never multiplied."""
    for field in ("model", "benchmark", "category"):
        value = f.get(field)
        if value:
            qs = qs.filter(**{field: "" if field == "category" and value == NO_CATEGORY else value})
    if f.get("outcome"):
        qs = qs.filter(outcome_success=_tri(f["outcome"]))
    if f.get("tid"):
        # exact or prefix: the trace_project_external index (traces migration) serves both
        qs = qs.filter(external_id__startswith=f["tid"])
    if f.get("tag"):
        qs = note_selectors.traces_tagged(qs, f["tag"])
    if since is not None:
        qs = qs.filter(created_at__gte=since)
    if until is not None:
        qs = qs.filter(created_at__lt=until)
    if run is not None:
        cond: dict = {}
        if f.get("policy"):
            cond["policy"] = f["policy"]
        if f.get("transition"):
            cond["transition"] = f["transition"]
        if f.get("applied") in ("yes", "no"):
            cond["applied"] = f["applied"] == "yes"
        for key, col in (("actor", "actor_success"), ("guarded", "guarded_success")):
            tri = _tri(f.get(key))
            if tri != "":
                cond[col] = tri
        if cond:
            qs = qs.filter(
                Exists(AuditResult.objects.filter(run=run, trace=OuterRef("pk"), **cond))
            )
    if f.get("q"):
        qs = search.traces_matching(qs, f["q"])
    return qs


def _below_newest(qs: QuerySet, project) -> QuerySet:  # type: ignore[no-untyped-def]
    """`qs` limited to ids up to the project's newest (one lookup in trace_project_id), for
    page 1. Newest first, PostgreSQL walks the primary key and filters on the project: with no
    bound it first walks every newer trace of other projects (page 1's time grows with their
    number); its plan does not take trace_project_id instead. Only the upper end: with both,
    the planner takes the range for a few hundred rows and sorts all of them."""
    if project is None:
        return qs
    newest = Trace.objects.filter(project=project).order_by("-id").values("id")[:1]
    return qs.filter(id__lte=Subquery(newest))


def _any_beyond(qs: QuerySet, pk: int, *, newer: bool) -> bool:
    """Is there a row past `pk` (newer or older)? Asked as the nearest such id, in id order:
    as a bare EXISTS the planner may walk another index (the upload's) and filter on the id —
    on a large project with several uploads it reads most of the project's rows for a late
    page; the primary key in order stops at the first row past `pk`."""
    near = qs.filter(id__gt=pk).order_by("id") if newer else qs.filter(id__lt=pk).order_by("-id")
    return near.values_list("id", flat=True).first() is not None


def trace_page(
    qs: QuerySet, *, after: int | None = None, before: int | None = None, project=None
) -> dict:  # type: ignore[no-untyped-def]
    """Keyset pagination, newest first: `after` = the last id seen (next page), `before` = the
    first id seen (previous page). Never OFFSET, so page 1,000 costs what page 1 does.
    `project`: the one `qs` is scoped to (page 1 starts at its newest trace)."""
    if before is not None:
        rows = list(qs.filter(id__gt=before).order_by("id")[: PAGE_SIZE + 1])
        more_newer = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE][::-1]
        more_older = bool(rows) and _any_beyond(qs, rows[-1].pk, newer=False)
    else:
        base = qs.filter(id__lt=after) if after is not None else _below_newest(qs, project)
        rows = list(base.order_by("-id")[: PAGE_SIZE + 1])
        more_older = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        more_newer = after is not None and bool(rows) and _any_beyond(qs, rows[0].pk, newer=True)
    return {
        "rows": rows,
        "next_after": rows[-1].pk if more_older and rows else None,
        "prev_before": rows[0].pk if more_newer and rows else None,
    }


def count_capped(qs: QuerySet, cap: int = 10_000) -> tuple[int, bool]:
    """How many rows match, counting at most `cap` (an exact count of a million rows would
    cost more than the page itself)."""
    n = qs.order_by()[: cap + 1].count()
    return min(n, cap), n > cap


def trace_choices(qs: QuerySet, field: str, limit: int = 300) -> list[str]:
    values = qs.order_by(field).values_list(field, flat=True).distinct()[:limit]
    return [v or NO_CATEGORY for v in values] if field == "category" else [v for v in values if v]


def filter_choices(*, project, visible: QuerySet) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    """Model, benchmark and category values of the project's visible traces, cached.

    A DISTINCT over a million traces costs about a second, far more than a page of rows.
    Traces become visible only when their upload finishes, so the set of finished uploads is
    the cache key: a new (or deleted) upload changes it, and nothing else changes the values."""
    done = Upload.objects.filter(project=project, status=Upload.Status.DONE).aggregate(
        n=Count("id"), last=Max("id"), at=Max("finished_at")
    )
    # The finish time too: ids alone can repeat where a transaction that created them was
    # rolled back (SQLite reuses them), which served one test's choices to the next.
    at = done["at"].isoformat() if done["at"] else ""
    key = f"ta:list-choices:{project.pk}:{done['n']}:{done['last']}:{at}"
    choices = cache.get(key)
    if choices is None:
        choices = {f: trace_choices(visible, f) for f in ("model", "benchmark", "category")}
        cache.set(key, choices, 3600)
    return choices


def result_badges(*, run: AuditRun, trace_ids: list[int]) -> dict[int, list[dict]]:
    """Per trace on the page: each policy's transition in the run (one query)."""
    out: dict[int, list[dict]] = {}
    rows = (
        AuditResult.objects.filter(run=run, trace_id__in=trace_ids)
        .order_by("trace_id", "policy")
        # the reason a policy did not apply, read out of the record in the database (the
        # record itself can be large): shown beside "not_applicable", never as "same"
        .annotate(na_reason=KT("record__not_applicable"))
        .values("trace_id", "policy", "transition", "applied", "na_reason")
    )
    order = {p: i for i, p in enumerate(run.policies)}
    for r in rows:
        out.setdefault(r["trace_id"], []).append(r)
    for lst in out.values():
        lst.sort(key=lambda r: order.get(r["policy"], 99))
    return out
