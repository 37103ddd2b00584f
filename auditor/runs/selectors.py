"""Read-side queries of audit runs, scoped through the traces selectors: runs, their errors and
tables, the transition matrix, comparisons of two runs, and what needs attention."""

from __future__ import annotations

from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery
from django.http import Http404

from auditor.runs.models import AuditItem, AuditResult, AuditRun
from auditor.runs.stats_display import delta_display
from traces import selectors as trace_selectors
from traces.models import Upload

# The four transitions of SPEC §5.5, in the order pages show them.
TRANSITIONS = tuple(AuditResult.Transition.values)


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
        cats = [
            {"category": c, **row, "d": delta_display(row)}
            for c, row in (s.get("per_category") or {}).items()
        ]
        out.append(
            {
                "policy": policy,
                "summary": s,
                "overall": overall,
                "d": delta_display(overall),
                "not_applicable": s.get("not_applicable") or {},
                # the seed paper's own table (policies.stats.paper_tables), under the policy's name
                "paper": s.get(policy) or {},
                "categories": cats,
            }
        )
    return out


def latest_run(*, project, runs: QuerySet[AuditRun] | None = None) -> AuditRun | None:  # type: ignore[no-untyped-def]
    """The run the traces list reads transitions from by default: the newest finished one,
    else the newest at all (of `runs`, the project's runs, when given: the list defers their
    summaries)."""
    runs = AuditRun.objects.filter(project=project) if runs is None else runs
    return runs.filter(status=AuditRun.Status.DONE).first() or runs.first()


# --- the run page and comparisons ----------------------------------------------------------


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
    model = dict(run.model_settings or {})
    for k, v in sorted((model.pop("endpoint", None) or {}).items()):
        flat[f"model.{k}"] = v
    for k, v in sorted(model.items()):
        flat[f"model.{k}"] = ", ".join(v) if k == "uses" else v
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


# Each list of the dashboard's "Needs attention" shows at most this many (newest first).
ATTENTION_MAX = 10


def project_attention(*, user, project) -> dict:  # type: ignore[no-untyped-def]
    """What needs a person on the project dashboard — across every run and upload, not only the
    latest: failed uploads (not dismissed by an owner) and uploads that rejected traces ("done
    with errors"), failed runs,
    runs with traces that could not be audited, and runs with unknown outcomes to annotate."""
    uploads = project.uploads.filter(dismissed=False)
    # Failed: the job failed, or it finished with every trace or line rejected (nothing stored).
    failed_uploads = list(
        uploads.filter(
            Q(status=Upload.Status.FAILED)
            | Q(status=Upload.Status.DONE, traces_accepted=0)
            & (Q(traces_rejected__gt=0) | Q(error_count__gt=0))
        ).order_by("-id")[:ATTENTION_MAX]
    )
    partial_uploads = list(
        uploads.filter(status=Upload.Status.DONE, traces_accepted__gt=0)
        .filter(Q(traces_rejected__gt=0) | Q(error_count__gt=0))
        .order_by("-id")[:ATTENTION_MAX]
    )
    runs = AuditRun.objects.filter(project=project).order_by("-id")
    failed_runs = list(runs.filter(status=AuditRun.Status.FAILED)[:ATTENTION_MAX])
    runs_with_errors = list(runs.filter(error_count__gt=0)[:ATTENTION_MAX])
    latest = latest_run(project=project)
    unknown = []
    for run in runs.filter(status=AuditRun.Status.DONE)[:ATTENTION_MAX]:
        for policy in run.policies:
            t = (((run.summary or {}).get(policy) or {}).get("overall") or {}).get(
                "transitions"
            ) or {}
            if t.get("unknown"):
                unknown.append({"run": run, "policy": policy, "n": t["unknown"]})
    return {
        "failed_uploads": failed_uploads,
        "partial_uploads": partial_uploads,
        "failed_runs": failed_runs,
        "runs_with_errors": runs_with_errors,
        "unknown": unknown,
        "latest": latest,
        "any": bool(
            failed_uploads or partial_uploads or failed_runs or runs_with_errors or unknown
        ),
    }
