"""Replay one trace of a finished run again with another judge — the human gate's verdicts —
and store its new results in place, then recompute the run's tables: when verdicts arrive, the
affected traces are replayed again and the run's tables update."""

from __future__ import annotations

from collections.abc import Sequence

from auditor.runs.calibration import label_events
from auditor.runs.models import DECISION_FIELDS, AuditRun
from auditor.runs.store import change_results, result_row
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
    changes = []
    for name in policies:
        if name not in results:
            continue
        row = result_row(run.pk, trace_id, name, results[name].to_dict(), stored)
        fields = ("guarded_trajectory", "guarded_from", *DECISION_FIELDS)
        changes.append((trace_id, name, {f: row[f] for f in fields}))
    if auditors.backend is not None:
        auditors.backend.flush()
    change_results(run.pk, changes)
