"""Read-side queries of the audit domain, scoped through the traces selectors."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from auditor.models import AuditItem, AuditRun
from traces import selectors as trace_selectors


def run_list(*, user, project=None) -> QuerySet[AuditRun]:  # type: ignore[no-untyped-def]
    qs = AuditRun.objects.filter(project__in=trace_selectors.project_list(user=user))
    if project is not None:
        qs = qs.filter(project=project)
    return qs.select_related("project")


def run_get(*, user, run_id: int) -> AuditRun:  # type: ignore[no-untyped-def]
    run = run_list(user=user).filter(pk=run_id).first()
    if run is None:
        raise Http404("no such audit run")
    return run


def run_errors(*, run: AuditRun, limit: int = 50) -> list[AuditItem]:
    return list(
        run.items.filter(status=AuditItem.Status.ERROR)
        .select_related("trace")
        .order_by("id")[:limit]
    )


def policy_tables(run: AuditRun) -> list[dict]:
    """Per policy: the overall row and the per-category rows, shaped for the template."""
    out = []
    for policy in run.policies:
        s = (run.summary or {}).get(policy) or {}
        overall = s.get("overall") or {}
        cats = [{"category": c, **row} for c, row in (s.get("per_category") or {}).items()]
        out.append({"policy": policy, "summary": s, "overall": overall, "categories": cats})
    return out


# --- the traces list: filters over trace columns and audit results ---------------------------

TRANSITIONS = ("rescue", "harm", "same", "unknown")
OUTCOMES = {"success": True, "failure": False}
NO_CATEGORY = "—"  # how run summaries name the empty category
PAGE_SIZE = 50


def latest_run(*, project) -> AuditRun | None:  # type: ignore[no-untyped-def]
    """The run the traces list reads transitions from by default: the newest finished one,
    else the newest at all."""
    runs = AuditRun.objects.filter(project=project)
    return runs.filter(status=AuditRun.Status.DONE).first() or runs.first()


def _tri(value: str | None) -> bool | None | str:
    """'success' → True, 'failure' → False, 'unknown' → None; anything else → '' (no filter)."""
    if value in OUTCOMES:
        return OUTCOMES[value]
    return None if value == "unknown" else ""


def trace_filter_apply(qs: QuerySet, *, run: AuditRun | None, f: dict[str, str]) -> QuerySet:
    """Narrow a scoped trace queryset by the list's filters (already-validated strings).

    Audit filters become one correlated EXISTS over the run's results, so every condition
    holds for the same (trace, policy) decision, and the trace rows are never multiplied."""
    from django.db.models import Exists, OuterRef

    from auditor.models import AuditResult
    from traces import search

    for field in ("model", "benchmark", "category"):
        value = f.get(field)
        if value:
            qs = qs.filter(**{field: "" if field == "category" and value == NO_CATEGORY else value})
    if f.get("outcome"):
        qs = qs.filter(outcome_success=_tri(f["outcome"]))
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


def trace_page(qs: QuerySet, *, after: int | None = None, before: int | None = None) -> dict:
    """Keyset pagination, newest first: `after` = the last id seen (next page), `before` = the
    first id seen (previous page). Never OFFSET, so page 1,000 costs what page 1 does."""
    if before is not None:
        rows = list(qs.filter(id__gt=before).order_by("id")[: PAGE_SIZE + 1])
        more_newer = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE][::-1]
        more_older = bool(rows) and qs.filter(id__lt=rows[-1].pk).exists()
    else:
        base = qs.filter(id__lt=after) if after is not None else qs
        rows = list(base.order_by("-id")[: PAGE_SIZE + 1])
        more_older = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        more_newer = after is not None and bool(rows) and qs.filter(id__gt=rows[0].pk).exists()
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
    from django.core.cache import cache
    from django.db.models import Count, Max

    from traces.models import Upload

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
    from auditor.models import AuditResult

    out: dict[int, list[dict]] = {}
    rows = (
        AuditResult.objects.filter(run=run, trace_id__in=trace_ids)
        .order_by("trace_id", "policy")
        .values("trace_id", "policy", "transition", "applied")
    )
    order = {p: i for i, p in enumerate(run.policies)}
    for r in rows:
        out.setdefault(r["trace_id"], []).append(r)
    for lst in out.values():
        lst.sort(key=lambda r: order.get(r["policy"], 99))
    return out


# --- the run page and comparisons ----------------------------------------------------------


def transition_matrix(run: AuditRun) -> dict[str, list[list[dict]]]:
    """Per policy, a 3×3 grid of counts: rows = actor success (yes, no, unknown), columns =
    guarded success (yes, no, unknown) — the 2×2 of SPEC §5.5 plus the unknowns."""
    from django.db.models import Count

    from auditor.models import AuditResult

    counts: dict[tuple, int] = {}
    for r in (
        AuditResult.objects.filter(run=run)
        .values("policy", "actor_success", "guarded_success")
        .annotate(n=Count("id"))
        .order_by()
    ):
        counts[(r["policy"], r["actor_success"], r["guarded_success"])] = r["n"]
    keys = [(True, "success"), (False, "failure"), (None, "unknown")]
    out = {}
    for policy in run.policies:
        grid = []
        for a, a_name in keys:
            row = []
            for g, g_name in keys:
                kind = (
                    "rescue"
                    if (a, g) == (False, True)
                    else "harm"
                    if (a, g) == (True, False)
                    else "same"
                    if a is not None and a == g
                    else "unknown"
                )
                row.append(
                    {
                        "actor": a_name,
                        "guarded": g_name,
                        "n": counts.get((policy, a, g), 0),
                        "kind": kind,
                    }
                )
            grid.append(row)
        out[policy] = grid
    return out


def effective_settings(run: AuditRun) -> dict[str, object]:
    """Every setting of the run, flattened to `policy.key` (the defaults each policy actually
    used come from the summary, so a comparison shows them too)."""
    flat: dict[str, object] = {
        "policies": ", ".join(run.policies),
        "judge": run.judge,
        "environment": run.environment,
    }
    for k, v in sorted((run.trace_filter or {}).items()):
        flat[f"filter.{k}"] = v
    for policy in run.policies:
        used = ((run.summary or {}).get(policy) or {}).get("settings") or {}
        merged = {**used, **((run.settings or {}).get(policy) or {})}
        for k, v in sorted(merged.items()):
            flat[f"{policy}.{k}"] = v
    return flat


def settings_diff(a: AuditRun, b: AuditRun) -> list[dict]:
    sa, sb = effective_settings(a), effective_settings(b)
    keys = list(dict.fromkeys([*sa, *sb]))
    return [
        {"key": k, "a": sa.get(k, "—"), "b": sb.get(k, "—"), "changed": sa.get(k) != sb.get(k)}
        for k in keys
    ]


def transitions_differing(a: AuditRun, b: AuditRun, limit: int = 200) -> dict:
    """(trace, policy) decisions whose transition differs between two runs of a project."""
    from django.db.models import Count, F, OuterRef, Q, Subquery

    from auditor.models import AuditResult

    other = AuditResult.objects.filter(run=b, trace=OuterRef("trace"), policy=OuterRef("policy"))
    qs = (
        AuditResult.objects.filter(run=a)
        .annotate(b_transition=Subquery(other.values("transition")[:1]))
        .filter(b_transition__isnull=False)
        .filter(~Q(b_transition=F("transition")))
    )
    per_policy = dict(
        qs.values("policy").annotate(n=Count("id")).order_by().values_list("policy", "n")
    )
    rows = list(qs.select_related("trace").order_by("policy", "trace_id")[:limit])
    return {"rows": rows, "per_policy": per_policy, "total": sum(per_policy.values())}


def project_attention(*, user, project) -> dict:  # type: ignore[no-untyped-def]
    """What needs a person on the project dashboard."""
    from traces.models import Upload

    failed_uploads = list(project.uploads.filter(status=Upload.Status.FAILED)[:10])
    runs_with_errors = list(
        AuditRun.objects.filter(project=project, error_count__gt=0).order_by("-id")[:10]
    )
    latest = latest_run(project=project)
    unknown = []
    if latest is not None:
        for policy in latest.policies:
            t = (((latest.summary or {}).get(policy) or {}).get("overall") or {}).get(
                "transitions"
            ) or {}
            if t.get("unknown"):
                unknown.append({"policy": policy, "n": t["unknown"]})
    return {
        "failed_uploads": failed_uploads,
        "runs_with_errors": runs_with_errors,
        "unknown": unknown,
        "latest": latest,
    }
