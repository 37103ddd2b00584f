"""The traces list of a project: filters over trace fields and audit results, full-text and
trace-id search, a date range, tags, keyset pagination, chosen columns and saved views. The
state lives in the query string, so a view can be shared and the back button restores it; htmx
swaps only the rows (`#rows`), which carry the toolbar that names the state (views, columns,
the share link)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from auditor.runs import blindness
from auditor.runs.models import AuditRun
from auditor.runs.outcome import audited_outcomes, shown_outcome
from auditor.runs.selectors import TRANSITIONS
from auditor.trace_list import saved_views, selectors, usage_columns
from auditor.trace_list.columns import BY_KEY, COLUMNS, DECISION_COLUMNS, SORTS, columns_param
from auditor.trace_list.sorting import parse_sort, sorted_page
from auditor.trace_list.state import FILTERS, TRI, ListState, as_int, list_state
from auditor.trace_notes import access as note_access
from auditor.trace_notes import selectors as note_selectors
from common.rendering import render_page_or_fragment, vary_on_htmx, wants_fragment
from policies import POLICIES
from traces import selectors as trace_selectors


def _sort_links(state: ListState) -> dict[str, dict[str, str]]:
    """Per sortable column: the URL that sorts by it (ascending, or flipped when it is the
    current sort) and its aria-sort value."""
    base = {k: v for k, v in state.params().items() if k != "sort"}
    current = state.f["sort"]
    out = {}
    for name in SORTS:
        aria = "ascending" if current == name else "descending" if current == f"-{name}" else ""
        target = f"-{name}" if current == name else name
        out[name] = {"url": f"?{urlencode({**base, 'sort': target})}", "aria": aria}
    return out


def _rows(page_rows, *, run, state: ListState) -> list[dict]:  # type: ignore[no-untyped-def]
    ids = [t.pk for t in page_rows]
    shown = set(state.cols)
    badges = (
        selectors.result_badges(run=run, trace_ids=ids) if run and "transitions" in shown else {}
    )
    audited = audited_outcomes(run_id=run.pk, trace_ids=ids) if run and "outcome" in shown else {}
    tags = note_selectors.tags_of(ids) if "tags" in shown else {}
    return [
        {
            "trace": t,
            "badges": badges.get(t.pk, []),
            "tags": tags.get(t.pk, []),
            "figures": usage_columns.cells(t),
            "outcome": shown_outcome(
                recorded=t.outcome_success,
                audited=audited.get(t.pk),
                run_id=run.pk if run else None,
            ),
        }
        for t in page_rows
    ]


@login_required
def trace_list(request: HttpRequest, pk: int) -> HttpResponse:
    project = trace_selectors.project_get(user=request.user, project_id=pk)
    list_url = reverse("auditor:trace-list", args=[project.pk])
    view_id = as_int(request.GET.get("view"))
    view = saved_views.view_get(user=request.user, project=project, view_id=view_id)
    if view is not None and view.query and not any(k in request.GET for k in (*FILTERS, "cols")):
        # ?view=<id> alone opens the view at its own query: the URL then names the state.
        return vary_on_htmx(
            redirect(f"{list_url}?{view.query}{'&' if view.query else ''}view={view.pk}")
        )
    visible = trace_selectors.trace_list(user=request.user, project=project)
    # Never their summaries: a large run's is megabytes, and the list shows none of it (reading
    # them whole would make this page several times slower).
    runs = AuditRun.objects.filter(project=project).defer("summary")
    decisions = blindness.sees_decisions(user=request.user, project=project)
    remembered = saved_views.columns_remembered(user=request.user, project=project)
    state, run = list_state(
        request.GET, project=project, runs=runs, cols=remembered, decisions=decisions
    )
    if view_id is not None and view is None:
        state.errors.append("that saved view does not exist or is not shared with you")
    f = state.f
    qs = usage_columns.apply(
        selectors.trace_filter_apply(visible, run=run, f=f, since=state.since, until=state.until), f
    )
    if f["q"]:
        # content search never matches a trace whose content is kept from this annotator
        blind = blindness.pair_blind_traces(user=request.user, project=project)
        if blind is not None:
            qs = qs.exclude(pk__in=blind)
    after, before = as_int(request.GET.get("after")), as_int(request.GET.get("before"))
    sort = parse_sort(f["sort"])
    if sort is None and (state.since or state.until):
        # Newest first by creation time, not by id: the same order (ids are handed out as
        # traces are added), but a date range in the past is then one range of the
        # trace_project_created index, not a walk back from the newest trace through every
        # trace added since.
        sort = ("created", True)
    if sort is None:
        page = selectors.trace_page(qs, after=after, before=before, project=project)
    else:
        page = sorted_page(qs, name=sort[0], desc=sort[1], after=after, before=before)
    params = state.params()
    sorts = _sort_links(state)
    count, more = selectors.count_capped(qs)
    role = trace_selectors.role_of(user=request.user, project=project)
    # A share link names the run its transitions are read from, so it shows the same rows when
    # a newer run lands; a saved view (`query`) follows the latest run unless one was chosen.
    share = urlencode({**params, **({"view": str(view.pk)} if view and view.shared else {})})
    ctx = {
        "project": project,
        "list_url": list_url,
        "f": f,
        "run": run,
        "columns": [
            {
                "key": k,
                "label": BY_KEY[k].label,
                "numeric": BY_KEY[k].numeric,
                "sort_url": sorts.get(k, {}).get("url", ""),
                "aria": sorts.get(k, {}).get("aria", ""),
            }
            for k in state.cols
        ],
        "cols_param": columns_param(state.cols),
        "query_without_tag": urlencode({k: v for k, v in params.items() if k != "tag"}),
        "all_columns": [c for c in COLUMNS if decisions or c.key not in DECISION_COLUMNS],
        "chosen": set(state.cols),
        "show": dict.fromkeys(state.cols, True),
        "rows": _rows(page["rows"], run=run, state=state),
        "count": count,
        "count_more": more,
        "errors": state.errors,
        "filtered": any(v for k, v in f.items() if k not in ("run", "sort")),
        # What a saved view keeps: the filters and, always, the columns (a view shows the
        # columns it was saved with, whatever the member chose since).
        "query": urlencode({**state.params(pin_run=False), "cols": ",".join(state.cols)}),
        "share_url": request.build_absolute_uri(f"{list_url}?{share}" if share else list_url),
        "views": list(saved_views.view_list(user=request.user, project=project)[:100]),
        "view": view,
        "can_share_views": role in saved_views.SHARERS,
        # Owners may add checked rows to an annotation queue of the run (a finished one).
        "can_queue": run is not None and run.status == AuditRun.Status.DONE and role == "owner",
        # The run's queues through the reverse relation: trace_list does not import annotation
        # (its sibling in the layers of pyproject.toml).
        "queues": list(run.queues.order_by("-id")) if run else [],  # type: ignore[attr-defined]
        "decisions": decisions,
        "here": request.get_full_path(),
        "next_url": f"?{urlencode({**params, 'after': page['next_after']})}"
        if page["next_after"]
        else None,
        "prev_url": f"?{urlencode({**params, 'before': page['prev_before']})}"
        if page["prev_before"]
        else None,
        "first_url": f"?{urlencode(params)}",
    }
    if not wants_fragment(request):
        choices = selectors.filter_choices(project=project, visible=visible)
        ctx.update(
            runs=list(runs.order_by("-id")[:50]) if decisions else [],
            policies=POLICIES,
            transitions=TRANSITIONS,
            tri=TRI,
            tags=note_selectors.project_tags(project) if note_access.can_read_tags(role) else [],
            choices=[
                {"field": k, "values": choices[k], "selected": f[k]}
                for k in ("model", "benchmark", "category")
            ],
        )
    return render_page_or_fragment(request, "auditor/trace_list.html", ctx, fragment="#rows")
