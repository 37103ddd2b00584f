"""Annotation pages: queues of a run, a queue (progress, agreement, disagreements, settings),
the keyboard-first annotation page and the adjudication view. Views translate; the work is in
auditor.annotation's services. Members see queues; owners and annotators annotate; owners create
queues, change their settings and adjudicate; outsiders get 404."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from auditor.annotation import bulk, display, schema, selectors, services
from auditor.annotation.models import AnnotationItem, AnnotationQueue
from auditor.runs.models import AuditRun
from common.rendering import render_page_or_fragment, vary_on_htmx, wants_fragment
from traces import selectors as trace_selectors

UNDO_DEPTH = 50


def _role(request: HttpRequest, project) -> str | None:  # type: ignore[no-untyped-def]
    return trace_selectors.role_of(user=request.user, project=project)


def _run_get(request: HttpRequest, pk: int) -> AuditRun:
    run = AuditRun.objects.select_related("project").filter(pk=pk).first()
    if run is None:
        raise Http404("no such audit run")
    trace_selectors.project_get(user=request.user, project_id=run.project_id)  # 404 outsiders
    return run


def _queue_get(request: HttpRequest, pk: int) -> AnnotationQueue:
    queue = AnnotationQueue.objects.select_related("run__project").filter(pk=pk).first()
    if queue is None:
        raise Http404("no such queue")
    trace_selectors.project_get(user=request.user, project_id=queue.run.project_id)
    return queue


def _undo_key(queue: AnnotationQueue) -> str:
    return f"annotate-undo-{queue.pk}"


# --- queues of a run ---------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def queue_list(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_get(request, pk)
    role = _role(request, run.project)
    error = ""
    if request.method == "POST":
        if role != "owner":
            raise PermissionDenied("only owners create annotation queues")
        try:
            queue = services.queue_create(
                run=run,
                name=request.POST.get("name", ""),
                kinds=request.POST.getlist("kinds"),
                source=request.POST.get("source", "needs"),
                result_filter={f: request.POST.get(f, "") for f in schema.FILTER_FIELDS},
                k=int(request.POST.get("k") or 2),
                lease_seconds=int(request.POST.get("lease_seconds") or 600),
                user=request.user,
            )
        except (schema.AnnotationRejected, ValueError) as exc:
            error = str(exc)
        else:
            messages.success(request, f"Queue created with {queue.items.count()} items.")
            return redirect(queue)
    queues = [
        {"queue": q, "progress": selectors.queue_progress(q, request.user)}
        for q in AnnotationQueue.objects.filter(run=run)
    ]
    ctx = {
        "project": run.project,
        "run": run,
        "role": role,
        "queues": queues,
        "kinds": [(k, schema.DEFAULT_SCHEMA[k]["question"]) for k in schema.KINDS],
        "policies": run.policies,
        "transitions": ["unknown", "rescue", "harm", "same"],
        "error": error,
        "form": request.POST if request.method == "POST" else {},
    }
    response = render(request, "auditor/queue_list.html", ctx, status=400 if error else 200)
    return response


# --- one queue ---------------------------------------------------------------------------------


def _queue_context(request: HttpRequest, queue: AnnotationQueue) -> dict:
    role = _role(request, queue.run.project)
    # Agreement figures would steer an annotator's next verdicts: owners and viewers (who give
    # none) see them always, an annotator once nothing in the queue is left for them.
    show_agreement = role != "annotator" or not selectors.items_left(queue=queue, user=request.user)
    return {
        "project": queue.run.project,
        "run": queue.run,
        "queue": queue,
        "role": role,
        "can_annotate": role in trace_selectors.WRITE_ROLES,
        "progress": selectors.queue_progress(queue, request.user),
        "agreement": selectors.queue_agreement(queue) if show_agreement else None,
        "show_agreement": show_agreement,
    }


@login_required
def queue_detail(request: HttpRequest, pk: int) -> HttpResponse:
    queue = _queue_get(request, pk)
    ctx = _queue_context(request, queue)
    ctx["disagreements"] = selectors.queue_disagreements(queue) if ctx["role"] == "owner" else []
    ctx["schema_json"] = json.dumps(
        {k: schema.schema_for(queue, k) for k in queue.kinds}, indent=2, ensure_ascii=False
    )
    return render_page_or_fragment(request, "auditor/queue.html", ctx, fragment="#stats")


@login_required
@require_POST
def queue_settings(request: HttpRequest, pk: int) -> HttpResponse:
    queue = _queue_get(request, pk)
    if _role(request, queue.run.project) != "owner":
        raise PermissionDenied("only owners change a queue's settings")
    try:
        raw = request.POST.get("schema", "").strip()
        services.queue_update(
            queue=queue,
            k=int(request.POST.get("k") or queue.k),
            schema=json.loads(raw) if raw else {},
        )
    except (ValueError, schema.AnnotationRejected) as exc:
        messages.error(request, f"Settings not saved: {exc}")
        return redirect(queue)
    messages.success(request, "Settings saved (they apply to verdicts from now on).")
    return redirect(queue)


# --- annotating --------------------------------------------------------------------------------


def _annotate_context(
    request: HttpRequest, queue: AnnotationQueue, item: AnnotationItem | None, error: str = ""
) -> dict:
    ctx = _queue_context(request, queue)
    ctx["item"] = item
    ctx["error"] = error
    ctx["can_undo"] = bool(request.session.get(_undo_key(queue)))
    # Pair verdicts are stored de-blinded (actor / twin): per-label counts beside the item would
    # tell an annotator which side their last choice was. The annotate page hides them.
    ctx["blind"] = True
    if item is not None:
        ctx["schema"] = schema.schema_for(queue, item.kind)
        ctx["show"] = display.item_display(item)
    return ctx


@login_required
@require_http_methods(["GET", "POST"])
def annotate(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the user's next item (claimed for the lease). POST: a verdict or a skip on the
    item the user holds, then the next item (the htmx fragment) or a redirect."""
    queue = _queue_get(request, pk)
    if _role(request, queue.run.project) not in trace_selectors.WRITE_ROLES:
        raise PermissionDenied("viewers can see queues but not annotate")
    error = ""
    if request.method == "POST":
        try:
            item_id = int(request.POST.get("item") or 0)
            verdict = services.verdict_submit(
                item_id=item_id,
                user=request.user,
                label=request.POST.get("label", ""),
                fatal=request.POST.get("fatal") in ("1", "on", "true"),
                comment=request.POST.get("comment", ""),
                skipped=request.POST.get("action") == "skip",
                queue_id=queue.pk,
            )
        except (ValueError, schema.AnnotationRejected) as exc:
            error = str(exc)
        else:
            stack = request.session.get(_undo_key(queue), [])
            request.session[_undo_key(queue)] = (stack + [verdict.pk])[-UNDO_DEPTH:]
            if not wants_fragment(request):
                return vary_on_htmx(redirect("annotate:next", queue.pk))
    item = services.item_claim(queue=queue, user=request.user)
    ctx = _annotate_context(request, queue, item, error)
    return render_page_or_fragment(request, "auditor/annotate.html", ctx, fragment="#panel")


@login_required
@require_POST
def annotate_undo(request: HttpRequest, pk: int) -> HttpResponse:
    """Undo the user's last verdict in this session: the item comes back to them."""
    queue = _queue_get(request, pk)
    if _role(request, queue.run.project) not in trace_selectors.WRITE_ROLES:
        raise PermissionDenied("viewers cannot annotate")
    stack = list(request.session.get(_undo_key(queue), []))
    error = ""
    item = None
    if not stack:
        error = "Nothing to undo in this session."
    else:
        verdict_id = stack.pop()
        request.session[_undo_key(queue)] = stack
        # a claim the user holds on the next item goes back to the pool first
        for held in AnnotationItem.objects.filter(queue=queue, claimed_by=request.user):
            services.item_release(item=held, user=request.user)
        try:
            item = services.verdict_undo(verdict_id=verdict_id, user=request.user)
        except schema.AnnotationRejected as exc:
            error = str(exc)
        if item is not None and item.claimed_by_id != request.user.pk:
            item = None  # someone else holds it right now: show the next item instead
    if not wants_fragment(request) and not error:
        return vary_on_htmx(redirect("annotate:next", queue.pk))
    if item is None:
        item = services.item_claim(queue=queue, user=request.user)
    ctx = _annotate_context(request, queue, item, error)
    return render_page_or_fragment(request, "auditor/annotate.html", ctx, fragment="#panel")


# --- adjudication ------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def adjudicate(request: HttpRequest, pk: int, item_pk: int) -> HttpResponse:
    """An owner sees every verdict on one item, de-blinded, and picks the final label."""
    queue = _queue_get(request, pk)
    if _role(request, queue.run.project) != "owner":
        raise PermissionDenied("only owners adjudicate")
    item = (
        AnnotationItem.objects.select_related("result__trace", "queue")
        .filter(queue=queue, pk=item_pk)
        .first()
    )
    if item is None:
        raise Http404("no such item")
    error = ""
    if request.method == "POST":
        try:
            services.item_adjudicate(
                item_id=item.pk, user=request.user, label=request.POST.get("label", "")
            )
        except schema.AnnotationRejected as exc:
            error = str(exc)
        else:
            messages.success(request, f"Item #{item.pk}: final verdict recorded.")
            nxt = queue.items.filter(status="disagree").order_by("id").first()
            if nxt is not None:
                return redirect("annotate:adjudicate", queue.pk, nxt.pk)
            return redirect(queue)
    ctx = {
        "project": queue.run.project,
        "run": queue.run,
        "queue": queue,
        "item": item,
        "schema": schema.schema_for(queue, item.kind),
        "show": display.item_display(item, blind=False),
        "verdicts": item.verdicts.select_related("annotator").order_by("id"),
        "choices": schema.adjudication_labels(item),
        "error": error,
        "trace_url": reverse("auditor:trace", args=[item.result.trace_id]),
    }
    return render(request, "auditor/annotate_adjudicate.html", ctx, status=400 if error else 200)


# --- traces chosen on the list -----------------------------------------------------------------


@login_required
@require_POST
def queue_add_traces(request: HttpRequest, pk: int) -> HttpResponse:
    """From the traces list: add the checked traces to a queue of the run (an existing one, or
    a new one asking every kind of question that applies). Owners only, as creating a queue."""
    run = _run_get(request, pk)
    if _role(request, run.project) != "owner":
        raise PermissionDenied("only owners add to annotation queues")
    back = request.POST.get("back", "")
    back = back if back.startswith("/") and not back.startswith("//") else run.get_absolute_url()
    try:
        ids = [int(x) for x in request.POST.getlist("trace") if x.isdigit() and len(x) < 19]
        target = request.POST.get("queue", "")
        if target.isdigit():
            queue = AnnotationQueue.objects.filter(run=run, pk=int(target)).first()
            if queue is None:
                raise Http404("no such queue in this run")
        else:
            queue = bulk.queue_for_traces(
                run=run, name=request.POST.get("name", ""), user=request.user
            )
        added = bulk.queue_add_traces(queue=queue, trace_ids=ids)
    except schema.AnnotationRejected as exc:
        messages.error(request, str(exc))
        return redirect(back)
    messages.success(
        request, f"{added} item{'s' if added != 1 else ''} added to queue {queue.name}."
    )
    return redirect(queue)
