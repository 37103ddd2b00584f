"""Pages of audit runs: the project dashboard, starting a run, the run page (polled while it
runs), retrying its failed traces, and the comparison of two runs."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from auditor.llm.endpoints import endpoint_list, is_owner
from auditor.llm.models import RunModelUsage
from auditor.llm.settings import JUDGES, USE_LABELS, model_settings_from
from auditor.llm.store import usage_summary
from auditor.runs import (
    blindness,
    compare_paired,
    per_model_display,
    run_page,
    selectors,
    task_matrix,
)
from auditor.runs.models import AuditRun
from auditor.runs.services import (
    ENVIRONMENTS,
    AuditRejected,
    audit_run_create,
    audit_run_retry_errors,
)
from auditor.runs.stats_display import delta_display, headline_says
from auditor.runs.trace_usage import trace_usage_per_model, usage_display
from auditor.runs.twincheck import twincheck_display
from common.rendering import render_page_or_fragment
from common.request_input import BadInput, loads_checked
from policies import POLICIES
from traces import selectors as trace_selectors
from traces.models import Upload
from traces.otlp_receiver.backlog import receiver_status


def _list_url(project_id: int, **params: object) -> str:
    """A link to the traces list filtered to `params` (empty values dropped)."""
    q = {k: v for k, v in params.items() if v not in (None, "")}
    return reverse("auditor:trace-list", args=[project_id]) + ("?" + urlencode(q) if q else "")


@login_required
def project_dashboard(request: HttpRequest, pk: int) -> HttpResponse:
    """The project's front page: headline numbers, what needs attention, audit runs, uploads.
    It lives in auditor because it shows both domains (traces must not depend on auditor)."""
    project = trace_selectors.project_get(user=request.user, project_id=pk)
    role = trace_selectors.role_of(user=request.user, project=project)
    # an annotator sees the runs' progress, none of their results (auditor.runs.blindness)
    decisions = blindness.sees_decisions(user=request.user, project=project)
    runs = list(AuditRun.objects.filter(project=project)[:10])
    # the rescue / harm columns of the runs table: none for an annotator
    policies = list(dict.fromkeys(p for r in runs for p in r.policies)) if decisions else []
    run_rows = []
    for r in runs:
        cells = [
            (((r.summary or {}).get(p) or {}).get("overall") or {}).get("transitions")
            for p in policies
        ]
        run_rows.append({"run": r, "cells": cells})
    attention = selectors.project_attention(user=request.user, project=project)
    latest = attention["latest"]
    headline = []
    if not decisions:
        attention["unknown"] = []
    elif latest is not None:
        for t in selectors.policy_tables(latest):
            o = t["overall"]
            tr = o.get("transitions") or {}
            headline.append(
                {
                    "policy": t["policy"],
                    "rescue": tr.get("rescue", 0),
                    "harm": tr.get("harm", 0),
                    "d": delta_display(o),
                    "na": tr.get("not_applicable", 0),
                    # traces whose transition is unknown (what "Needs attention" counts): not
                    # the Δ's unknown pairs, which leave out exact replays of unknown outcome
                    "unknown": tr.get("unknown", 0),
                    "unknown_url": _list_url(
                        project.pk, run=latest.pk, policy=t["policy"], transition="unknown"
                    ),
                    "rescue_url": _list_url(
                        project.pk, run=latest.pk, policy=t["policy"], transition="rescue"
                    ),
                    "harm_url": _list_url(
                        project.pk, run=latest.pk, policy=t["policy"], transition="harm"
                    ),
                }
            )
    for u in attention["unknown"]:
        u["url"] = _list_url(project.pk, run=u["run"].pk, policy=u["policy"], transition="unknown")
    ctx = {
        "project": project,
        "role": role,
        "can_run": role in trace_selectors.WRITE_ROLES,
        "uploads": project.uploads.all()[:50],
        "trace_count": trace_selectors.trace_list(user=request.user, project=project).count(),
        "runs": run_rows,
        "headline_policies": policies,
        "headline": headline,
        "attention": attention,
        "latest": latest,
        "tokens": project.tokens.filter(revoked_at__isnull=True) if role == "owner" else [],
        "new_token": request.session.pop("new_token", None),
        "receiver": receiver_status(project.pk) if role == "owner" else None,
        "otlp_endpoint": request.build_absolute_uri(reverse("traces:otlp-traces")),
    }
    return render(request, "auditor/project.html", ctx)


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The run page; while the run is running, htmx polls it and swaps `#status`."""
    run = run_page.run_page_get(user=request.user, run_id=pk)
    if run is None:
        raise Http404("no such audit run")
    project = run.project
    # an annotator sees the run's progress, none of its results (auditor.runs.blindness)
    decisions = blindness.sees_decisions(user=request.user, project=project)
    done = run.status == AuditRun.Status.DONE and decisions
    tables = selectors.policy_tables(run) if done else []
    matrices = run_page.transition_matrix(run) if tables else {}
    for t in tables:
        p = t["policy"]
        base = {"run": run.pk, "policy": p}
        t["matrix"] = [
            [
                {
                    **cell,
                    "url": _list_url(
                        project.pk, **base, actor=cell["actor"], guarded=cell["guarded"]
                    ),
                }
                for cell in row
            ]
            for row in matrices.get(p, [])
        ]
        t["links"] = {k: _list_url(project.pk, **base, transition=k) for k in selectors.TRANSITIONS}
        t["links"]["all"] = _list_url(project.pk, **base)
        t["links"]["applied"] = _list_url(project.pk, **base, applied="yes")
        for c in t["categories"]:
            c["links"] = {
                k: _list_url(project.pk, **base, category=c["category"], transition=k)
                for k in selectors.TRANSITIONS
            }
            c["links"]["all"] = _list_url(project.pk, **base, category=c["category"])
        per_model_display.attach(
            t, lambda base=base, model="", **kw: _list_url(project.pk, **base, **kw, model=model)
        )
        t["says"] = headline_says(
            t["d"],
            n_traces=int(t["summary"].get("n_traces") or 0),
            applied=int(t["summary"].get("applied") or 0),
            mcnemar_p=t["overall"].get("mcnemar_p"),
        )
    # Its id only: a run's summary can be megabytes.
    previous = (
        AuditRun.objects.filter(project=project, pk__lt=run.pk).order_by("-pk").only("pk").first()
    )
    return render_page_or_fragment(
        request,
        "auditor/run.html",
        {
            "run": run,
            "project": project,
            "tables": tables,
            "delta_chart": per_model_display.run_delta_figure(tables) if tables else None,
            "errors": selectors.run_errors(run=run),
            "can_run": trace_selectors.can_write(user=request.user, project=project),
            "decisions_hidden": not decisions,
            "calibrations": run.calibrations.order_by("model", "verifier") if decisions else [],
            "previous": previous,
            "model_usage": usage_summary(RunModelUsage.objects.filter(run=run).first()),
            "twincheck": twincheck_display(run) if done else None,
            "data_quality": run_page.data_quality(run) if tables else None,
            "trace_usage": usage_display(trace_usage_per_model(run)) if tables else None,
        },
        fragment="#status",
    )


@login_required
def run_compare(request: HttpRequest) -> HttpResponse:
    """Two runs of one project side by side: settings diff, Δ and rescue/harm per policy, and
    the decisions whose transition differs."""
    visible = selectors.run_list(user=request.user)
    ids = [request.GET.get(k, "") for k in ("a", "b")]
    runs = [visible.filter(pk=int(i)).first() if i.isdigit() and len(i) < 19 else None for i in ids]
    a, b = runs
    if (ids[0] and a is None) or (ids[1] and b is None):
        raise Http404("no such audit run")
    project = (a or b).project if (a or b) else None
    error = None
    ctx: dict = {"a": a, "b": b, "project": project}
    if a and b and a.project_id != b.project_id:
        error = "The two runs belong to different projects; compare runs of one project."
    elif a and b and not blindness.sees_decisions(user=request.user, project=a.project):
        # the comparison lists the decisions whose transition differs, trace by trace
        raise PermissionDenied("The audit's decisions are not shown to annotators.")
    elif a and b:
        policies = list(dict.fromkeys([*a.policies, *b.policies]))
        rows = []
        for p in policies:
            cells = []
            for r in (a, b):
                o = (((r.summary or {}).get(p)) or {}).get("overall") or {}
                cells.append(
                    {
                        "o": o,
                        "d": delta_display(o),
                        "t": o.get("transitions") or {},
                        "has": p in r.policies,
                    }
                )
            rows.append({"policy": p, "a": cells[0], "b": cells[1]})
        diff = selectors.transitions_differing(a, b)
        ctx.update(
            paired=compare_paired.paired_differences(a, b, policies),
            trace_sets=compare_paired.trace_sets(a, b),
        )
        ctx.update(
            settings=selectors.settings_diff(a, b),
            policy_rows=rows,
            differing=diff,
        )
    if project is None:
        # No run chosen yet: the picker offers one project's runs only (?project=, else the
        # project of the newest run the user sees) — runs of two projects cannot be compared.
        pid = request.GET.get("project", "")
        scope = visible.filter(project_id=int(pid)) if pid.isdigit() and len(pid) < 19 else visible
        newest = scope.order_by("-id").first()
        project = newest.project if newest is not None else None
        ctx["project"] = project
    ctx["choices"] = (
        list(AuditRun.objects.filter(project=project).order_by("-id")[:100]) if project else []
    )
    ctx["error"] = error
    return render(request, "auditor/run_compare.html", ctx, status=400 if error else 200)


def _upload_of(request: HttpRequest, project) -> Upload | None:  # type: ignore[no-untyped-def]
    raw = request.POST.get("upload") or request.GET.get("upload")
    if not raw:
        return None
    if not str(raw).isdigit():
        raise Http404("no such upload")
    # Another project's upload is as unknown here as a missing one.
    upload = project.uploads.filter(pk=int(raw), status=Upload.Status.DONE).first()
    if upload is None:
        raise Http404("no such finished upload in this project")
    return upload


@login_required
def run_new(request: HttpRequest, pk: int) -> HttpResponse:
    project = trace_selectors.project_get(user=request.user, project_id=pk)
    if not trace_selectors.can_write(user=request.user, project=project):
        raise PermissionDenied("viewers cannot start audits")
    error = None
    owner = is_owner(user=request.user, project=project)
    # "Audit these N traces" from an upload's page: the run is narrowed to that upload.
    upload = _upload_of(request, project)
    if request.method == "POST":
        try:
            model_settings = _model_settings(request, project, owner)
            run = audit_run_create(
                project=project,
                policies=request.POST.getlist("policies") or list(POLICIES),
                settings=_policy_settings(request),
                judge=request.POST.get("judge", "heuristic"),
                model_settings=model_settings,
                environment=request.POST.get("environment", "auto"),
                label=request.POST.get("label", ""),
                trace_filter={"upload": upload.pk} if upload is not None else None,
                user=request.user,
            )
        except AuditRejected as exc:
            error = str(exc)
        else:
            return redirect(run)
    return render(
        request,
        "auditor/run_new.html",
        {
            "project": project,
            "policies": POLICIES,
            "judges": JUDGES,
            "environments": ENVIRONMENTS,
            "uses": USE_LABELS,
            "owner": owner,
            "endpoints": list(endpoint_list(project=project)) if owner else [],
            "form": request.POST if request.method == "POST" else {},
            "error": error,
            "upload": upload,
            "upload_traces": (
                trace_selectors.trace_list(user=request.user, project=project)
                .filter(upload=upload)
                .count()
                if upload is not None
                else None
            ),
        },
        status=400 if error else 200,
    )


def _policy_settings(request: HttpRequest) -> object:
    """The form's per-policy settings: a JSON object, checked by `audit_run_create` like the
    API's and the CLI's ({} when left empty)."""
    raw = request.POST.get("settings", "").strip()
    if not raw:
        return {}
    try:
        return loads_checked(raw, where="settings")
    except BadInput as exc:
        raise AuditRejected(str(exc), field="settings") from exc


def _model_settings(request: HttpRequest, project, owner: bool) -> dict:  # type: ignore[no-untyped-def]
    """The form's model fieldset as run settings ({} when left empty). Only owners use a
    model endpoint; the fields of the old design (a URL, a key source) are refused."""
    fields = {k: request.POST.get(f"model_{k}", "") for k in ("endpoint", "model")}
    for old in ("base_url", "api_key", "api_key_env", "api_key_file"):
        if f"model_{old}" in request.POST:
            fields[old] = request.POST[f"model_{old}"]
    if fields["endpoint"].strip() and not owner:
        raise PermissionDenied("only the project's owners start audits with a model endpoint")
    fields.update(
        max_calls=request.POST.get("model_max_calls", ""),
        max_tokens=request.POST.get("model_max_tokens", ""),
        uses=request.POST.getlist("model_uses"),
    )
    try:
        return model_settings_from(
            fields, judge=request.POST.get("judge", "heuristic"), project=project
        )
    except ValueError as exc:
        raise AuditRejected(f"model settings: {exc}") from exc


@login_required
@require_POST
def run_retry(request: HttpRequest, pk: int) -> HttpResponse:
    run = selectors.run_get(user=request.user, run_id=pk)
    if not trace_selectors.can_write(user=request.user, project=run.project):
        raise PermissionDenied("viewers cannot retry audits")
    n = audit_run_retry_errors(run=run)
    messages.info(request, f"{n} failed traces queued again." if n else "Nothing to retry.")
    return redirect(run)


@login_required
def run_matrix(request: HttpRequest, pk: int) -> HttpResponse:
    """A run's tasks × models matrix for one policy (auditor.runs.task_matrix), filterable."""
    run = run_page.run_page_get(user=request.user, run_id=pk)
    if run is None:
        raise Http404("no such audit run")
    if not blindness.sees_decisions(user=request.user, project=run.project):
        # each cell is one trace's decision (auditor.runs.blindness)
        raise PermissionDenied("The audit's per-trace decisions are not shown to annotators.")
    g = request.GET
    policy = g.get("policy") if g.get("policy") in run.policies else run.policies[0]
    transition = g.get("transition", "")
    page = g.get("page", "1")
    matrix = task_matrix.task_matrix(
        run,
        policy,
        models=g.getlist("model") or None,
        category=g.get("category", "")[:200],
        transition=transition if transition in selectors.TRANSITIONS else "",
        differs=g.get("differs") == "1",
        q=g.get("q", "")[:200],
        page=int(page) if page.isdigit() and len(page) < 9 else 1,
    )
    query = g.copy()
    query.pop("page", None)
    ctx = {
        "run": run,
        "project": run.project,
        "policy": policy,
        "matrix": matrix,
        "transitions": selectors.TRANSITIONS,
        "f": g,
        "chosen": g.getlist("model"),
        "query": query.urlencode(),
    }
    return render(request, "auditor/run_matrix.html", ctx)
