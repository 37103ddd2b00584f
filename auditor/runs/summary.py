"""Run-level tables per policy, from the stored results: the TwinCheck paper's Tables 1–2 and
each policy's own metrics (policies.report), and the counts the CLI prints."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
from django.conf import settings as django_settings
from django.db import connection
from django.db.models import Count, F, Q, TextField
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast

from auditor.llm.models import RunModelUsage
from auditor.llm.store import usage_summary
from auditor.runs.models import DECISION_FIELDS, AuditResult, AuditRun
from auditor.runs.stats_display import policy_statistics
from policies.paper_tables import RECORD_KEYS as TABLE_KEYS
from policies.report import RECORD_KEYS as REPORT_KEYS
from policies.report import RunSummary
from policies.twincheck_report import RECORD_KEYS as TWINCHECK_KEYS
from policies.twincheck_report import TwincheckReport

#: Results read per query: the summary holds one page of rows at a time, whatever the run's size.
PAGE_SIZE = 2000


def audit_run_summary(run: AuditRun) -> dict[str, Any]:
    """Run-level tables per policy (the TwinCheck paper's Tables 1–2 and each policy's own
    metrics), from the stored results.

    Streamed (issue 17): each policy's results are read a page at a time in trace order and
    folded into `policies.report.RunSummary` (and TwinCheck's `TwincheckReport`), which keep
    counts and a few bytes per result; holding every decoded record took the finishing worker
    to 1.2 GB at 10⁵ traces. A test pins the tables to `summarise_run` over the whole rows."""
    n_boot = django_settings.TA_SUMMARY_BOOTSTRAP
    out: dict[str, Any] = {}
    for policy in run.policies:
        summary = RunSummary(policy)
        report = TwincheckReport() if policy == "twincheck" else None
        cells: dict[tuple[Any, Any], int] = {}
        for row, category in _result_rows(run, policy):
            summary.add(row, category)
            if report is not None:
                report.add(row, category)
            if row["transition"] != AuditResult.Transition.NOT_APPLICABLE:
                key = (row["actor_success"], row["guarded_success"])
                cells[key] = cells.get(key, 0) + 1
        if not summary.n:
            out[policy] = {"n": 0, MATRIX_KEY: []}
            continue
        out[policy] = summary.result(n_boot=n_boot)
        out[policy][MATRIX_KEY] = [[a, g, n] for (a, g), n in cells.items()]
        if report is not None:  # the paper's per-certificate table and Fig. 2 (gate AUC/AP)
            out[policy]["report"] = report.result(n_boot=n_boot, seed=0)
    return out


def _result_rows(run: AuditRun, policy: str) -> Iterator[tuple[dict[str, Any], str]]:
    """The policy's results in trace order, each with its trace's category ("—" for none), a
    page at a time (keyset on the trace, which the (run, trace, policy) unique index serves).
    The records are read as text of what the tables read, decoded by orjson: the JSONField
    path decodes them with the stdlib, half of the summary's time on a large run."""
    fields = [f for f in DECISION_FIELDS if f != "record"]
    results = (
        AuditResult.objects.filter(run=run, policy=policy)
        .order_by("trace_id")
        .annotate(record_text=_record_text(policy), category=F("trace__category"))
        .values("trace_id", "record_text", "category", *fields)
    )
    # The run's settings are in every record; the summary shows the first result's, read once
    # here rather than with every row.
    first = results.values_list("record__settings", flat=True)[:1]
    settings = first[0] if first else None
    last = None
    while True:
        page = list((results if last is None else results.filter(trace_id__gt=last))[:PAGE_SIZE])
        for r in page:
            record = orjson.loads(r.pop("record_text"))
            if last is None and isinstance(record, dict):
                record["settings"] = settings
            last = r["trace_id"]
            category = r.pop("category") or "—"
            yield {**r, "record": record, "policy": policy}, category
        if len(page) < PAGE_SIZE:
            return


#: Where each policy's summary keeps its transition-matrix counts for the run page
#: (auditor.runs.run_page reads them there; counting 400k results took it 0.4 s).
MATRIX_KEY = "transition_matrix"


# What the run tables read of a checklist feedback event (policies.paper_tables and
# checklist_metrics). A checklist record carries its feedback events whole (~30 keys each) and a
# claims timeline the tables never read: most of a run's record bytes, so decoding them was most
# of the summary's time (issue 17). PostgreSQL projects them before sending; a test pins the
# tables to those of the full records.
FEEDBACK_KEYS = ("before", "after", "guarded_after", "valid", "not_applicable")
FEEDBACK_KEYS += ("actor_class", "guarded_class")


def record_keys(policy: str) -> tuple[str, ...]:
    """The record keys the policy's run tables read (but the settings, read once)."""
    keys = [k for k in REPORT_KEYS if k != "settings"] + list(TABLE_KEYS.get(policy, ()))
    if policy == "twincheck":
        keys += TWINCHECK_KEYS
    return tuple(dict.fromkeys(keys))


def _record_text(policy: str) -> Any:
    """The record as text for the summary: on PostgreSQL, only its keys the tables read, and
    of the checklist's feedback events only `FEEDBACK_KEYS` (most of the bytes are elsewhere:
    the summary sent and decoded 9.9 kB a checklist record, 1.1–1.3 kB the others')."""
    if connection.vendor != "postgresql":
        return Cast("record", TextField())
    pairs = ", ".join(f"'{k}', e->'{k}'" for k in FEEDBACK_KEYS)
    events = (
        f"(SELECT COALESCE(jsonb_agg(jsonb_build_object({pairs}) ORDER BY i), '[]') "
        "FROM jsonb_array_elements(value) WITH ORDINALITY AS f(e, i))"
    )
    value = (
        f"CASE WHEN key = 'feedback_events' AND jsonb_typeof(value) = 'array' THEN {events} "
        "ELSE value END"
    )
    return RawSQL(
        "(CASE WHEN jsonb_typeof(record) = 'object' THEN "
        f"(SELECT COALESCE(jsonb_object_agg(key, {value}), '{{}}') "
        "FROM jsonb_each(record) WHERE key = ANY(%s)) ELSE record END)::text",
        [list(record_keys(policy))],
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
