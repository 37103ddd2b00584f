"""Run-level tables per policy, from the stored results: the TwinCheck paper's Tables 1–2 and
each policy's own metrics (policies.stats.report), and the counts the CLI prints."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
from django.conf import settings as django_settings
from django.db import connection
from django.db.models import Count, Q, TextField
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast

from auditor.llm.models import RunModelUsage
from auditor.llm.store import usage_summary
from auditor.runs import trace_usage
from auditor.runs.models import DECISION_FIELDS, AuditResult, AuditRun
from auditor.runs.stats_display import model_statistics, policy_statistics
from auditor.runs.trace_usage import trace_usage_per_model
from policies.data_quality import data_quality_section
from policies.stats.paper_tables import EVENT_KEYS, ChecklistTable
from policies.stats.report import PolicyFold
from traces.models import Trace

#: A result row's fields the summary reads beside its record.
ROW_FIELDS = tuple(f for f in DECISION_FIELDS if f != "record")
#: A trace's category in the summary's tables when it has none.
NO_CATEGORY = "—"

#: Results read per query: the summary holds one page of rows at a time, whatever the run's size.
PAGE_SIZE = 500


def audit_run_summary(run: AuditRun) -> dict[str, Any]:
    """Run-level tables per policy (the TwinCheck paper's Tables 1–2 and each policy's own
    metrics), from the stored results.

    Streamed: each policy's results are read a page at a time in trace order and folded into
    a `policies.stats.report.PolicyFold` (`RunSummary`, TwinCheck's `TwincheckReport`),
    which keeps counts and a few bytes per result; holding every decoded record would grow the
    finishing worker's memory with the run's size. A test pins the tables to `summarise_run` over
    the whole rows. The only way a run's summary is made: when its last chunk finishes
    (`auditor.runs.work.finish_if_complete`) and when its results change
    (`auditor.runs.store.change_results`)."""
    n_boot = django_settings.TA_SUMMARY_BOOTSTRAP
    analyze_results_if_misjudged(run)
    out: dict[str, Any] = {}
    for policy in run.policies:
        # The queue counted, not listed (PolicyFold's default): its readers count it, and a
        # run's unknown results are read where they are needed (the traces list's transition
        # filter, the annotation queues), not from a summary that grows with the run.
        fold = PolicyFold(policy)
        for row, category, trace in _result_rows(run, policy):
            fold.add(row, category, **trace)
        paper = fold.summary.paper
        if isinstance(paper, ChecklistTable) and _events_apart(policy):
            for event, count in _feedback_events(run, policy):
                paper.add_event(event, count)
        out[policy] = fold.result(n_boot=n_boot)
    out[trace_usage.SUMMARY_KEY] = trace_usage.summary_entry(run)
    return out


#: Results of a run below which the summary trusts the planner whatever it expects: a page
#: read the slow way then scans a few thousand rows.
TRUSTED_ROWS = 5000
#: The columns the summary's page query plans on: gathering them reads no record.
_PLANNED = ("run_id", "trace_id", "policy", "transition")


def analyze_results_if_misjudged(run: AuditRun) -> bool:
    """ANALYZE the results' key columns when the planner expects under half the run's results:
    a run's results are written in minutes and summarised at once, before autovacuum comes
    round, and the statistics it left know nothing of the new run: the planner then expects a
    few rows of the run and reads each page by scanning and sorting all of a policy's results,
    which makes a large run's summary many times slower. Asked of the plan, not of the table's
    change counters: a run replacing a deleted one changes the run ids, not the table's size, and an
    ANALYZE of some columns leaves the counters as they were. Returns whether it analyzed."""
    expected = run.traces_total * len(run.policies)
    if connection.vendor != "postgresql" or expected < TRUSTED_ROWS:
        return False
    table = connection.ops.quote_name(AuditResult._meta.db_table)
    with connection.cursor() as cur:
        cur.execute(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {table} WHERE run_id = {int(run.pk)}")
        plan = cur.fetchone()[0]
        plan = orjson.loads(plan) if isinstance(plan, str | bytes) else plan
        if plan[0]["Plan"]["Plan Rows"] >= expected / 2:
            return False
        cur.execute(f"ANALYZE {table} ({', '.join(_PLANNED)})")
    return True


def _result_rows(
    run: AuditRun, policy: str
) -> Iterator[tuple[dict[str, Any], str, dict[str, str]]]:
    """The policy's results in trace order, each with its trace's category (`NO_CATEGORY` for
    none) and what keys the per-model tables (`trace_keys`), a page at a time (keyset on the
    trace, which the (run, trace, policy) unique index serves). The records are read as text
    (`_record_text`), decoded by orjson: the JSONField path decodes them with the stdlib, half of
    the summary's time on a large run."""
    results = (
        AuditResult.objects.filter(run=run, policy=policy)
        .order_by("trace_id")
        .annotate(record_text=_record_text(policy))
        .values("trace_id", "record_text", *ROW_FIELDS)
    )
    last = None
    while True:
        page = list((results if last is None else results.filter(trace_id__gt=last))[:PAGE_SIZE])
        # The page's traces by their own query (category and the per-model keys): a join lets
        # PostgreSQL merge-join the traces from the first id on every page, quadratic in the
        # run's size.
        traces = {
            t[0]: t[1:]
            for t in Trace.objects.filter(pk__in=[r["trace_id"] for r in page]).values_list(
                "pk", "category", *TRACE_KEY_FIELDS
            )
        }
        for r in page:
            record = orjson.loads(r.pop("record_text"))
            last = r["trace_id"]
            category, *keys = traces.get(r["trace_id"]) or ("", *[""] * len(TRACE_KEY_FIELDS))
            yield (
                {**r, "record": record, "policy": policy},
                category or NO_CATEGORY,
                trace_keys(*keys),
            )
        if len(page) < PAGE_SIZE:
            return


#: The trace fields the per-model tables are keyed by (`trace_keys`).
TRACE_KEY_FIELDS = ("model", "agent", "run_label", "benchmark", "task_id", "run_source")


def trace_keys(
    model: str, agent: str, label: str, benchmark: str, task_id: str, run_source: str = ""
) -> dict[str, str]:
    """A trace's model, run source and task for `PolicyFold.add`: the run source is the run the
    trace was uploaded as (`Trace.run_source`; for traces stored without one, agent/model/label
    as `traces.run_source.RunSource.key` names it), the task is the benchmark's task id (matched
    across models; none without a task id)."""
    source = run_source or "/".join(dict.fromkeys(p for p in (agent, model, label) if p))
    task = f"{benchmark}:{task_id}" if task_id else ""
    return {"model": model, "source": source, "task": task}


def _run_order(run: AuditRun) -> Any:
    order = {p: i for i, p in enumerate(run.policies)}
    return lambda p: (order.get(p, len(order)), p)


def _events_apart(policy: str) -> bool:
    """Whether PostgreSQL counts the policy's feedback events (and its rows come without)."""
    return policy == "checklist" and connection.vendor == "postgresql"


#: The checklist record's keys its rows come without (`_record_text`): a claims timeline no
#: table reads, and the feedback events, counted apart (`_feedback_events`).
CHECKLIST_APART = ("timeline", "feedback_events")


def _record_text(policy: str) -> Any:
    """The record as text for the summary: the whole record, but for the checklist's on
    PostgreSQL. A checklist record carries its feedback events whole (~30 keys each) and a
    claims timeline the tables never read: most of a run's record bytes (several times the
    size of another policy's record), so sending and decoding them would be most of the
    summary's time. Its rows come without both; `_feedback_events` counts the events.
    (Projecting the other policies' records to the keys their tables read makes PostgreSQL
    slower than sending them whole.)"""
    if not _events_apart(policy):
        return Cast("record", TextField())
    return RawSQL(
        "(CASE WHEN jsonb_typeof(record) = 'object' "
        f"THEN record - '{{{','.join(CHECKLIST_APART)}}}'::text[] ELSE record END)::text",
        [],
    )


def _feedback_events(run: AuditRun, policy: str) -> Iterator[tuple[dict[str, Any], int]]:
    """The policy's feedback events counted by PostgreSQL: each distinct combination of what
    `ChecklistTable` reads of an event, with how many events have it, in the order of its first
    occurrence (by trace, then within the record), as the table would have met them: a few
    dozen rows for the many thousands of events of a large run."""
    values = ", ".join(f"e->'{k}'" for k in EVENT_KEYS)
    events = "r.record->'feedback_events'"
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT jsonb_build_array({values})::text, count(*) "
            f"FROM {AuditResult._meta.db_table} r CROSS JOIN LATERAL jsonb_array_elements("
            f"CASE WHEN jsonb_typeof({events}) = 'array' THEN {events} ELSE '[]' END) "
            "WITH ORDINALITY AS f(e, i) WHERE r.run_id = %s AND r.policy = %s "
            f"GROUP BY {', '.join(f'e->{k!r}' for k in EVENT_KEYS)} "
            "ORDER BY min(ARRAY[r.trace_id, i])",
            [run.pk, policy],
        )
        for values_text, count in cur:
            yield dict(zip(EVENT_KEYS, orjson.loads(values_text), strict=True)), count


def audit_run_counts(run: AuditRun) -> dict[str, Any]:
    """The CLI's `--json` view of a finished run: counts per policy, TwinCheck's report, the
    data-quality section (`policies.data_quality`, None when import flagged nothing), and what
    the run's model calls used (None without a model)."""
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
        if paper is not None:  # the seed paper's own table (policies.stats.paper_tables)
            per_policy[policy]["paper_table"] = paper
        if summary.get("per_model"):  # the same tables per model, and Δ of each two models
            per_policy[policy].update(model_statistics(summary))
        report = summary.get("report")
        if report:  # TwinCheck's per-certificate table and gate AUC/AP
            per_policy[policy]["report"] = report
    return {
        "run": run.pk,
        "status": run.status,
        "traces": run.traces_total,
        "errors": run.error_count,
        # in the run's order (the GROUP BY's order follows PostgreSQL's plan, which varies)
        "policies": {p: per_policy[p] for p in sorted(per_policy, key=_run_order(run))},
        "data_quality": data_quality_section(run.summary, list(run.policies)),
        "judge": run.judge,
        "model": usage_summary(RunModelUsage.objects.filter(run=run).first()),
        # what the audited traces themselves took, used and cost, per model
        "trace_usage": trace_usage_per_model(run),
    }
