"""Replay one trace of a finished run again with another judge — the human gate's verdicts —
and store its new results in place, then recompute the run's tables (issue 11 item 3: "when
verdicts arrive, the affected traces are replayed again and the run's tables update")."""

from __future__ import annotations

from collections.abc import Sequence

from auditor.runs.calibration import label_events
from auditor.runs.folds import discard_folds
from auditor.runs.models import DECISION_FIELDS, AuditResult, AuditRun
from auditor.runs.record_settings import remember_settings
from auditor.runs.store import SETTINGS, result_row
from auditor.runs.summary import audit_run_summary
from auditor.runs.work import AuditorCache, with_env_name
from policies import Judge
from traces.models import Trace
from traces.selectors import load_events


def rereplay_trace(
    *, run: AuditRun, trace_id: int, judge: Judge, policies: Sequence[str] = ("twincheck",)
) -> None:
    """The trace's results for ``policies`` replaced by a fresh replay under ``judge`` (other
    policies' results and the run's settings are untouched). Call inside a transaction."""
    trace = with_env_name(Trace.objects.filter(pk=trace_id)).get()
    auditors = AuditorCache(run, judge)
    stored = load_events([trace_id])[trace_id]
    events = label_events(stored, auditors.executed)
    auditor = auditors.for_trace(trace.env_name, trace.model, events)
    if auditors.backend is not None:
        events, _ = auditors.backend.prepare(events, run.policies)
    results = auditor.audit(events)
    for name in policies:
        if name not in results:
            continue
        row = result_row(run.pk, trace_id, name, results[name].to_dict(), stored)
        remember_settings(run.pk, row.get(SETTINGS) or {})
        AuditResult.objects.filter(run=run, trace_id=trace_id, policy=name).update(
            **{f: row[f] for f in ("guarded_trajectory", "guarded_from", *DECISION_FIELDS)}
        )
    if auditors.backend is not None:
        auditors.backend.flush()
    discard_folds(run.pk)  # results changed under the batches' folds: summaries from the rows
    AuditRun.objects.filter(pk=run.pk).update(summary=audit_run_summary(run))
