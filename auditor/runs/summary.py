"""Run-level tables per policy, from the stored results: the TwinCheck paper's Tables 1–2 and
each policy's own metrics (policies.report), and the counts the CLI prints."""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings as django_settings
from django.db import connection
from django.db.models import Count, Q, TextField
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast

from auditor.llm.models import RunModelUsage
from auditor.llm.store import usage_summary
from auditor.runs.models import DECISION_FIELDS, AuditResult, AuditRun
from auditor.runs.stats_display import policy_statistics
from policies.report import summarise_run
from policies.twincheck_report import twincheck_report
from traces.models import Trace


def audit_run_summary(run: AuditRun) -> dict[str, Any]:
    """Run-level tables per policy (the TwinCheck paper's Tables 1–2 and each policy's own
    metrics), from the stored results."""
    categories = dict(Trace.objects.filter(audit_items__run=run).values_list("pk", "category"))
    out: dict[str, Any] = {}
    for policy in run.policies:
        # The records as text, decoded by orjson: the JSONField path decodes them with the
        # stdlib, half of this function's time on a large run (issue 17).
        fields = [f for f in DECISION_FIELDS if f != "record"]
        rows = list(
            AuditResult.objects.filter(run=run, policy=policy)
            .order_by("trace_id")
            .annotate(record_text=_record_text(policy))
            .values("trace_id", "record_text", *fields)
        )
        if not rows:
            out[policy] = {"n": 0, MATRIX_KEY: []}
            continue
        results = []
        for r in rows:
            r["record"] = orjson.loads(r.pop("record_text"))
            results.append({**r, "policy": policy, "guarded_trajectory": None})
        cats = [categories.get(r["trace_id"]) or "—" for r in rows]
        n_boot = django_settings.TA_SUMMARY_BOOTSTRAP
        out[policy] = summarise_run(results, cats, n_boot=n_boot)
        out[policy][MATRIX_KEY] = matrix_cells(rows)
        if policy == "twincheck":  # the paper's per-certificate table and Fig. 2 (gate AUC/AP)
            out[policy]["report"] = twincheck_report(results, cats, n_boot=n_boot)
    return out


#: Where each policy's summary keeps its transition-matrix counts for the run page
#: (auditor.runs.run_page reads them there; counting 400k results took it 0.4 s).
MATRIX_KEY = "transition_matrix"


def matrix_cells(rows: list[dict[str, Any]]) -> list[list[Any]]:
    """[actor_success, guarded_success, n] per pair of outcomes among the applicable results
    (not-applicable results are no pair: the page shows them apart, never as "same")."""
    cells: dict[tuple[Any, Any], int] = {}
    for r in rows:
        if r["transition"] != AuditResult.Transition.NOT_APPLICABLE:
            key = (r["actor_success"], r["guarded_success"])
            cells[key] = cells.get(key, 0) + 1
    return [[a, g, n] for (a, g), n in cells.items()]


# What the run tables read of a checklist feedback event (policies.paper_tables and
# checklist_metrics). A checklist record carries its feedback events whole (~30 keys each) and a
# claims timeline the tables never read: most of a run's record bytes, so decoding them was most
# of the summary's time (issue 17). PostgreSQL projects them before sending; a test pins the
# tables to those of the full records.
FEEDBACK_KEYS = ("before", "after", "guarded_after", "valid", "not_applicable")
FEEDBACK_KEYS += ("actor_class", "guarded_class")


def _record_text(policy: str) -> Any:
    """The record as text for the summary (the whole record, but for the checklist's)."""
    if policy != "checklist" or connection.vendor != "postgresql":
        return Cast("record", TextField())
    pairs = ", ".join(f"'{k}', e->'{k}'" for k in FEEDBACK_KEYS)
    events = (
        f"(SELECT jsonb_agg(jsonb_build_object({pairs}) ORDER BY i) "
        "FROM jsonb_array_elements(record->'feedback_events') WITH ORDINALITY AS f(e, i))"
    )
    return RawSQL(
        "(CASE WHEN jsonb_typeof(record->'feedback_events') = 'array' "
        f"THEN jsonb_set(record - 'timeline', '{{feedback_events}}', COALESCE({events}, '[]')) "
        "ELSE record - 'timeline' END)::text",
        [],
    )


def audit_run_counts(run: AuditRun) -> dict[str, Any]:
    """The CLI's `--json` view of a finished run: counts per policy, TwinCheck's report, and
    what the run's model calls used (None without a model)."""
    per_policy: dict[str, Any] = {}
    counts = {
        "n": Count("id"),
        "applied": Count("id", filter=Q(applied=True)),
        # Successes are counted over known outcomes and printed as "k of known n": a count of
        # True alone over all n reads every unknown as a failure.
        # (the known counts come first: an annotation named like a field shadows it after)
        "actor_known": Count("id", filter=Q(actor_success__isnull=False)),
        "guarded_known": Count("id", filter=Q(guarded_success__isnull=False)),
        "actor_success": Count("id", filter=Q(actor_success=True)),
        "guarded_success": Count("id", filter=Q(guarded_success=True)),
        **{t: Count("id", filter=Q(transition=t)) for t in AuditResult.Transition.values},
    }
    rows = AuditResult.objects.filter(run=run).values("policy").annotate(**counts)
    for r in rows:
        policy = r.pop("policy")
        per_policy[policy] = r
    for policy in run.policies:
        per_policy.setdefault(policy, dict.fromkeys(counts, 0))
        summary = (run.summary or {}).get(policy) or {}
        overall = summary.get("overall")
        if overall:  # Δ with its CI and the McNemar test, from the run-level tables
            per_policy[policy]["overall"] = overall
            # the shaping every page uses: n_unknown, bounds, no degenerate CI with unknowns
            per_policy[policy]["statistics"] = policy_statistics(summary)
        paper = summary.get(policy)
        if paper is not None:  # the seed paper's own table (policies.paper_tables)
            per_policy[policy]["paper_table"] = paper
        report = summary.get("report")
        if report:  # TwinCheck's per-certificate table and gate AUC/AP
            per_policy[policy]["report"] = report
    return {
        "run": run.pk,
        "status": run.status,
        "traces": run.traces_total,
        "errors": run.error_count,
        "policies": per_policy,
        "judge": run.judge,
        "model": usage_summary(RunModelUsage.objects.filter(run=run).first()),
    }
