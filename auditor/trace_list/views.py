"""The traces list of a project: filters over trace fields and audit results, full-text
search, keyset pagination. The filter state lives in the query string, so a view can be
shared and the back button restores it; htmx swaps only the rows (`#rows`)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse

from auditor.runs import blindness
from auditor.runs.models import AuditRun
from auditor.runs.outcome import audited_outcomes, shown_outcome
from auditor.runs.selectors import TRANSITIONS, latest_run
from auditor.trace_list import selectors, usage_columns
from auditor.trace_list.sorting import SORTS, parse_sort, sorted_page
from common.rendering import render_page_or_fragment, wants_fragment
from policies import POLICIES
from traces import selectors as trace_selectors

FILTERS = (
    "run", "policy", "transition", "applied", "actor", "guarded",
    "outcome", "model", "benchmark", "category", "q", "sort",
    *usage_columns.FILTERS,
)  # fmt: skip
TRI = ("success", "failure", "unknown")


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() and len(value) < 19 else None


AUDIT_FILTERS = ("run", "policy", "transition", "applied", "actor", "guarded")


def _clean(  # type: ignore[no-untyped-def]
    request: HttpRequest, project, runs, *, decisions: bool
) -> tuple[dict[str, str], AuditRun | None]:
    """Only known values survive; anything else means "no filter", never an error page.
    Without `decisions` (the annotator role, `auditor.runs.blindness`) the audit filters are
    dropped and no run is read."""
    g = request.GET
    f = {k: g.get(k, "").strip()[:200] for k in FILTERS}
    if not decisions:
        f.update(dict.fromkeys(AUDIT_FILTERS, ""))
        if parse_sort(f["sort"]) is None:
            f["sort"] = ""
        usage_columns.clean(f)
        return f, None
    run = None
    run_id = _int(f["run"])
    if run_id is not None:
        run = runs.filter(pk=run_id).first()
    if run is None:
        run = latest_run(project=project, runs=runs)
    f["run"] = str(run.pk) if run else ""
    if f["policy"] not in POLICIES:
        f["policy"] = ""
    if f["transition"] not in TRANSITIONS:
        f["transition"] = ""
    if f["applied"] not in ("yes", "no"):
        f["applied"] = ""
    for k in ("actor", "guarded", "outcome"):
        if f[k] not in TRI:
            f[k] = ""
    if parse_sort(f["sort"]) is None:
        f["sort"] = ""
    usage_columns.clean(f)
    return f, run


def _sort_links(state: dict[str, str], current: str) -> dict[str, dict[str, str]]:
    """Per sortable column: the URL that sorts by it (ascending, or flipped when it is the
    current sort) and its aria-sort value."""
    base = {k: v for k, v in state.items() if k != "sort"}
    out = {}
    for name in SORTS:
        aria = "ascending" if current == name else "descending" if current == f"-{name}" else ""
        target = f"-{name}" if current == name else name
        out[name] = {"url": f"?{urlencode({**base, 'sort': target})}", "aria": aria}
    return out


@login_required
def trace_list(request: HttpRequest, pk: int) -> HttpResponse:
    project = trace_selectors.project_get(user=request.user, project_id=pk)
    visible = trace_selectors.trace_list(user=request.user, project=project)
    # Never their summaries: a large run's is megabytes, and the list shows none of it (reading
    # them whole would make this page several times slower).
    runs = AuditRun.objects.filter(project=project).defer("summary")
    decisions = blindness.sees_decisions(user=request.user, project=project)
    f, run = _clean(request, project, runs, decisions=decisions)
    qs = usage_columns.apply(selectors.trace_filter_apply(visible, run=run, f=f), f)
    if f["q"]:
        # content search never matches a trace whose content is kept from this annotator
        blind = blindness.pair_blind_traces(user=request.user, project=project)
        if blind is not None:
            qs = qs.exclude(pk__in=blind)
    after, before = _int(request.GET.get("after")), _int(request.GET.get("before"))
    sort = parse_sort(f["sort"])
    if sort is None:
        page = selectors.trace_page(qs, after=after, before=before, project=project)
    else:
        page = sorted_page(qs, name=sort[0], desc=sort[1], after=after, before=before)
    state = {k: v for k, v in f.items() if v}
    count, more = selectors.count_capped(qs)
    badges = selectors.result_badges(run=run, trace_ids=[t.pk for t in page["rows"]]) if run else {}
    partial = wants_fragment(request)
    audited = audited_outcomes(run_id=run.pk, trace_ids=[t.pk for t in page["rows"]]) if run else {}
    ctx = {
        "project": project,
        "f": f,
        "run": run,
        "rows": [
            {
                "trace": t,
                "badges": badges.get(t.pk, []),
                "figures": usage_columns.cells(t),
                "outcome": shown_outcome(
                    recorded=t.outcome_success,
                    audited=audited.get(t.pk),
                    run_id=run.pk if run else None,
                ),
            }
            for t in page["rows"]
        ],
        "count": count,
        "count_more": more,
        "filtered": any(v for k, v in f.items() if k not in ("run", "sort")),
        "sorts": _sort_links(state, f["sort"]),
        # Owners may add checked rows to an annotation queue of the run (a finished one).
        "can_queue": run is not None
        and run.status == AuditRun.Status.DONE
        and trace_selectors.role_of(user=request.user, project=project) == "owner",
        # The run's queues through the reverse relation: trace_list does not import annotation
        # (its sibling in the layers of pyproject.toml).
        "queues": list(run.queues.order_by("-id")) if run else [],  # type: ignore[attr-defined]
        "decisions": decisions,
        "here": request.get_full_path(),
        "next_url": f"?{urlencode({**state, 'after': page['next_after']})}"
        if page["next_after"]
        else None,
        "prev_url": f"?{urlencode({**state, 'before': page['prev_before']})}"
        if page["prev_before"]
        else None,
        "first_url": f"?{urlencode(state)}",
    }
    if not partial:
        choices = selectors.filter_choices(project=project, visible=visible)
        ctx.update(
            runs=list(runs.order_by("-id")[:50]) if decisions else [],
            policies=POLICIES,
            transitions=TRANSITIONS,
            tri=TRI,
            choices=[
                {"field": k, "values": choices[k], "selected": f[k]}
                for k in ("model", "benchmark", "category")
            ],
        )
    return render_page_or_fragment(request, "auditor/trace_list.html", ctx, fragment="#rows")
