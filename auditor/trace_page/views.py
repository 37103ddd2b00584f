"""The trace page: the event timeline and, per audit run, the policies' decisions.

Every view here makes a fixed number of queries whatever the trace's length: the timeline is a
keyset window of events (``?after_seq=``), long events are folded and fetched one by one, and the
audit part reads one run's results for this trace. The page's data shaping lives in
the package's other modules (pure functions); these views only load rows and render.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode

from auditor.runs import blindness
from auditor.runs.models import AuditResult, AuditRun
from auditor.runs.outcome import audited_outcomes, shown_outcome
from auditor.trace_notes.notes_context import notes_context
from auditor.trace_page import panels, step_rows, steps
from auditor.trace_page.alignment import CONTINUATIONS, TRANSITIONS, outcome_text, side_by_side
from auditor.trace_page.blind import held_item, hides_timeline
from auditor.trace_page.events import event_view
from auditor.trace_page.text import pretty
from auditor.trace_page.turns import group_by_turn
from common.rendering import render_page_or_fragment, vary_on_htmx, wants_fragment
from traces import selectors as trace_selectors
from traces.models import Event, Trace

WINDOW = 200  # events rendered per page of the timeline
RUNS_SHOWN = 50


def _int_param(request: HttpRequest, name: str) -> int | None:
    try:
        return int(request.GET.get(name, ""))
    except ValueError:
        return None


def _event_window(trace: Trace, after_seq: int | None) -> tuple[list[dict[str, Any]], int | None]:
    """One keyset window of the timeline and the ``after_seq`` of the next, if any."""
    qs = trace_selectors.event_list(trace=trace)
    if after_seq is not None:
        qs = qs.filter(seq__gt=after_seq)
    rows = list(qs.values("seq", "line", "payload")[: WINDOW + 1])
    more = len(rows) > WINDOW
    rows = rows[:WINDOW]
    events = [
        {
            "view": event_view(r["payload"], r["seq"]),
            "line": r["line"],
            "seq": r["seq"],
            "turn": r["payload"].get("turn") if isinstance(r["payload"], dict) else None,
            "role": r["payload"].get("role") if isinstance(r["payload"], dict) else None,
        }
        for r in rows
    ]
    return group_by_turn(events), (rows[-1]["seq"] if more else None)


def _audit_context(request: HttpRequest, trace: Trace) -> dict[str, Any]:
    """The selected run (``?run=``, else the latest with results for this trace), its results,
    the selected policy (``?policy=``, else the first that diverges), its side-by-side and one
    panel per policy."""
    runs = list(
        AuditRun.objects.filter(project_id=trace.project_id, results__trace=trace)
        .distinct()
        .order_by("-created_at", "-id")[:RUNS_SHOWN]
    )
    ctx: dict[str, Any] = {"runs": runs, "run": None, "results": [], "selected": None}
    if not runs:
        return ctx
    wanted = _int_param(request, "run")
    run = next((r for r in runs if r.pk == wanted), runs[0])
    order = {name: i for i, name in enumerate(run.policies or [])}
    results = sorted(
        AuditResult.objects.filter(run=run, trace=trace), key=lambda r: order.get(r.policy, 99)
    )
    ctx.update(run=run, results=results)
    if not results:
        return ctx
    by_policy = {r.policy: r for r in results}
    selected = by_policy.get(request.GET.get("policy", ""))
    if selected is None:
        selected = next(
            (r for r in results if r.guarded_trajectory is not None),
            next((r for r in results if r.applied), results[0]),
        )
    ctx["selected"] = selected

    actor: list[Any] | None = None
    if selected.guarded_trajectory is not None:
        # One query, whatever the length; the alignment needs the whole actor trajectory.
        actor = list(trace_selectors.event_list(trace=trace).values_list("payload", flat=True))
        ctx["sbs"] = side_by_side(
            actor, selected.full_trajectory(actor), continuation=selected.continuation
        )
    types = panels.event_types(r.policy for r in results)
    if actor is not None:
        panel_events = [e for e in actor if isinstance(e, dict) and e.get("type") in types]
    elif types:
        panel_events = list(
            Event.objects.filter(trace=trace, type__in=sorted(types))
            .order_by("seq")
            .values_list("payload", flat=True)
        )
    else:
        panel_events = []
    wanted_at = {
        r.pk: panels.panel_for(r.policy).positions(r.record if isinstance(r.record, dict) else {})
        for r in results
    }
    at = _events_at(trace, actor, {i for v in wanted_at.values() for i in v})
    shown = []
    for r in results:
        record = r.record if isinstance(r.record, dict) else {}
        panel = panels.panel_for(r.policy)
        events = [e for e in panel_events if e.get("type") in panel.event_types]
        events += [{**at[i], "_position": i} for i in wanted_at[r.pk] if i in at]
        shown.append(
            {
                "result": r,
                "policy": r.policy,
                "title": panel.title,
                "template": panel.template,
                "data": panel.build(record, events),
                "chart_id": f"chart-{r.policy}",
                "data_id": f"chart-{r.policy}-data",
                "record": pretty(record),
                "not_applied": panel.not_applied,
            }
        )
    ctx["panels"] = shown
    ctx["continuation_help"] = CONTINUATIONS.get(selected.continuation, "")
    ctx["transition_help"] = TRANSITIONS.get(selected.transition, "")
    ctx["actor_outcome"] = outcome_text(selected.actor_success)
    ctx["guarded_outcome"] = outcome_text(selected.guarded_success)
    return ctx


def _events_at(
    trace: Trace, actor: list[Any] | None, positions: set[int]
) -> dict[int, dict[str, Any]]:
    """The events at these positions of the ordered trace (0-based, as policies number them),
    from the loaded trajectory or in one query."""
    if not positions:
        return {}
    if actor is not None:
        return {i: actor[i] for i in positions if i < len(actor) and isinstance(actor[i], dict)}
    rows = (
        trace_selectors.event_list(trace=trace)
        .annotate(position=Window(RowNumber(), order_by=F("seq").asc()))
        .filter(position__in=[i + 1 for i in positions])
        .values_list("position", "payload")
    )
    return {pos - 1: payload for pos, payload in rows if isinstance(payload, dict)}


STEPS_CACHE_SECONDS = 24 * 3600


def _steps_context(request: HttpRequest, trace: Trace, ctx: dict[str, Any]) -> dict[str, Any]:
    """The steps tree (`steps`) of the whole trace, its rows linked to the timeline — to the
    event's anchor when it is in this window, else to the window that starts with it — and to
    the side-by-side where that shows the event.

    The tree reads every event (one query, no content) and is the same on every view: a trace's
    events never change once stored, so its rows are cached under the trace's id, creation
    time and event count; only the links are made per request."""
    show_all = request.GET.get("steps") == "all"
    limit = step_rows.ALL_LIMIT if show_all else step_rows.LIMIT
    key = f"ta:trace-steps:{trace.pk}:{trace.created_at.timestamp()}:{trace.event_count}"
    data = None if show_all else cache.get(key)
    if data is None:
        events = trace_selectors.event_steps(trace=trace)
        header = next((e for e in events if e["type"] == "trace"), None)
        tree = steps.build(events, header["spans"] if header else None)
        rows, total = step_rows.rows(tree, limit=limit)
        data = {**step_rows.summary(tree), "rows": rows, "total": total}
        if not show_all:
            cache.set(key, data, STEPS_CACHE_SECONDS)
    window = {item["seq"] for item in ctx["events"]}
    state = ctx["state"]
    in_sbs: set[int] = set()
    sbs = ctx.get("sbs")
    if sbs is not None:
        for row in (*sbs.prefix_rows, *sbs.rows, *sbs.tail_rows):
            if row.actor is not None and row.actor.seq is not None:
                in_sbs.add(row.actor.seq)
    for row in data["rows"]:
        seq = row["seq"]
        if seq is None:
            continue
        if seq in window:
            row["href"] = f"#ev-{seq}"
        else:
            row["href"] = f"?{urlencode({**state, 'after_seq': seq - 1})}#ev-{seq}"
        row["sbs_href"] = f"#sbs-ev-{seq}" if seq in in_sbs else ""
    data["cut"] = data["total"] - len(data["rows"])
    data["all_url"] = f"?{urlencode({**state, 'steps': 'all'})}#steps"
    return data


def _state(request: HttpRequest) -> dict[str, str]:
    """The URL state to carry into links: which run and policy are shown."""
    return {k: request.GET[k] for k in ("run", "policy") if request.GET.get(k)}


@login_required
def trace_detail(request: HttpRequest, pk: int) -> HttpResponse:
    trace = trace_selectors.trace_get(user=request.user, trace_id=pk)
    role = trace_selectors.role_of(user=request.user, project=trace.project)
    ctx: dict[str, Any] = {
        "trace": trace,
        "project": trace.project,
        "state": _state(request),
        "role": role,
    }
    held = held_item(user=request.user, trace=trace, role=role)
    if held is not None:
        ctx.update(runs=[], run=None, results=[], selected=None, held_item=held)
    elif role == blindness.ANNOTATOR:  # blindness.sees_decisions for a person, from `role`
        ctx.update(runs=[], run=None, results=[], selected=None, decisions_hidden=True)
    else:
        ctx.update(_audit_context(request, trace))
    run = ctx.get("run")
    audited = audited_outcomes(run_id=run.pk, trace_ids=[trace.pk]).get(trace.pk) if run else None
    ctx["outcome"] = shown_outcome(
        recorded=trace.outcome_success, audited=audited, run_id=run.pk if run else None
    )
    if not wants_fragment(request):  # a policy or run tab changes only the audit part
        state = ctx["state"]
        share = trace.get_absolute_url() + (f"?{urlencode(state)}" if state else "")
        ctx.update(
            notes_context(
                user=request.user,
                trace=trace,
                share_url=request.build_absolute_uri(share),
                role=ctx["role"],
            )
        )
    if hides_timeline(held):
        ctx.update(events=[], next_seq=None, after_seq=None, timeline_hidden=True)
    elif not wants_fragment(request):
        after_seq = _int_param(request, "after_seq")
        events, next_seq = _event_window(trace, after_seq)
        ctx.update(events=events, next_seq=next_seq, after_seq=after_seq)
        ctx["steps"] = _steps_context(request, trace, ctx)
    return render_page_or_fragment(request, "auditor/trace.html", ctx, fragment="#audit")


def _refuse_if_blind(request: HttpRequest, trace: Trace) -> None:
    """403 for an event of a trace whose timeline is kept from this annotator (`blind`)."""
    if hides_timeline(held_item(user=request.user, trace=trace)):
        raise PermissionDenied(
            "This trace's events are hidden while one of its pairs waits for your verdict."
        )


@login_required
def trace_events(request: HttpRequest, pk: int) -> HttpResponse:
    """The next window of the timeline (htmx "load more"); without htmx, the page from there."""
    trace = trace_selectors.trace_get(user=request.user, trace_id=pk)
    _refuse_if_blind(request, trace)
    after_seq = _int_param(request, "after_seq")
    if not wants_fragment(request):
        query = {**_state(request), **({"after_seq": after_seq} if after_seq is not None else {})}
        url = reverse("auditor:trace", args=[trace.pk]) + f"?{urlencode(query)}#timeline"
        return vary_on_htmx(redirect(url))
    events, next_seq = _event_window(trace, after_seq)
    ctx = {
        "trace": trace,
        "project": trace.project,
        "events": events,
        "next_seq": next_seq,
        "after_seq": after_seq,
        "state": _state(request),
    }
    return vary_on_htmx(render(request, "auditor/trace_events.html", ctx))


@login_required
def trace_event(request: HttpRequest, pk: int, seq: int) -> HttpResponse:
    """One event in full: the body of a folded event (htmx), or a page of its own."""
    trace = trace_selectors.trace_get(user=request.user, trace_id=pk)
    _refuse_if_blind(request, trace)
    row = trace_selectors.event_list(trace=trace).filter(seq=seq).values("seq", "line", "payload")
    row = row.first()
    if row is None:
        raise Http404("no such event")
    ctx = {
        "trace": trace,
        "project": trace.project,
        "ev": event_view(row["payload"], row["seq"], fold=False),
        "line": row["line"],
        "raw": pretty(row["payload"]),
        "back": reverse("auditor:trace", args=[trace.pk])
        + (f"?{urlencode(_state(request))}" if _state(request) else "")
        + f"#ev-{seq}",
    }
    return render_page_or_fragment(
        request, "auditor/trace_event.html", ctx, fragment="auditor/trace_event_body.html"
    )
