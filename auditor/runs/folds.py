"""Run summaries made as the results are stored (issue 17: "computed incrementally").

Each batch of a chunk folds its results into `policies.run_fold.PolicyFold`s while the worker
still holds them, and stores the folds with the results, in the same transaction
(`SummaryFold`). The finished run's summary merges them in trace order (`summary_from_folds`)
instead of reading every stored record back: that read was the finishing worker's 0.5–1.0 s of
a 4,000-trace run and 9–24 s at 10⁵ traces.

The folds see each record as the summary would read it back (`batch_folds`): its stored JSON
text decoded (orjson's NaN → null, tuples → lists, numpy → plain numbers), a checklist record
projected as the summary's SQL projects it, the first of each batch with its settings. The
merged folds are used only when they cover the run's done traces exactly once, in trace order,
all written by this code (`FOLD_VERSION`); otherwise — a redelivered chunk, a retried trace
amid a batch, a result changed by a human verdict (`discard_folds`), folds of an older
release, a part that cannot be merged exactly — the summary reads the results as before
(`auditor.runs.summary.audit_run_summary`), and is the same either way.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from django.conf import settings as django_settings

from auditor.runs.models import AuditRun, SummaryFold
from auditor.runs.record_settings import full_record
from auditor.runs.store import SETTINGS, json_text
from auditor.runs.summary import CHECKLIST_APART, NO_CATEGORY, ROW_FIELDS
from policies.paper_tables import EVENT_KEYS, ChecklistTable
from policies.run_fold import FOLD_VERSION, PolicyFold, dumps, loads

log = logging.getLogger(__name__)


def folds_enabled() -> bool:
    return bool(django_settings.TA_SUMMARY_FOLDS)


def batch_folds(
    rows: Sequence[Mapping[str, Any]], categories: Mapping[int, str | None]
) -> dict[str, PolicyFold]:
    """A batch's result rows (`auditor.runs.store.policy_row`, in trace order) folded per
    policy, each row as `audit_run_summary` reads it back from the database — a checklist
    record without its feedback events, which are counted apart (`_EventCounts`), as the
    summary has PostgreSQL count them."""
    folds: dict[str, PolicyFold] = {}
    events = _EventCounts()
    for row in rows:
        policy = row["policy"]
        record = row["record"]
        if policy == "checklist" and isinstance(record, dict):
            events.add(record.get("feedback_events"))
            record = {k: v for k, v in record.items() if k not in CHECKLIST_APART}
        text = json_text(record)
        record = orjson.loads(text) if text is not None else None
        fold = folds.get(policy)
        if fold is None:  # the summary shows the settings of a policy's first record
            fold = folds[policy] = PolicyFold(policy)
            record = full_record(record, row.get(SETTINGS))
        trace_id = row["trace_id"]
        read = {f: row[f] for f in ROW_FIELDS}
        read.update(trace_id=trace_id, record=record, policy=policy)
        fold.add(read, categories.get(trace_id) or NO_CATEGORY)
    checklist = folds.get("checklist")
    if checklist is not None and isinstance(checklist.summary.paper, ChecklistTable):
        events.add_to(checklist.summary.paper)
    return folds


class _EventCounts:
    """Feedback events counted by the JSON text of the values `ChecklistTable` reads of them
    (a malformed event as none, a malformed list as no events, as the summary's SQL has them),
    in the order of their first occurrence. A batch holds 18 events a trace on the bench's
    checklist traces and a handful of distinct ones: each distinct one is decoded and added
    once, with its count, instead of every event encoded, decoded and added whole — those
    events are 85 % of a run's record bytes."""

    NONE = json_text([None] * len(EVENT_KEYS))

    def __init__(self) -> None:
        self.counts: dict[str | None, int] = {}

    def add(self, events: Any) -> None:
        counts = self.counts
        for e in events if isinstance(events, list) else ():
            key = json_text([e.get(k) for k in EVENT_KEYS]) if isinstance(e, dict) else self.NONE
            counts[key] = counts.get(key, 0) + 1

    def add_to(self, table: ChecklistTable) -> None:
        for key, count in self.counts.items():
            table.add_event(dict(zip(EVENT_KEYS, orjson.loads(str(key)), strict=True)), count)


def store_folds(run_id: int, trace_ids: Sequence[int], folds: Mapping[str, PolicyFold]) -> None:
    """Store a batch's folds; call in the transaction that marks its traces done."""
    if not trace_ids:
        return
    SummaryFold.objects.bulk_create(
        [
            SummaryFold(
                run_id=run_id,
                first_trace=min(trace_ids),
                last_trace=max(trace_ids),
                traces=len(trace_ids),
                version=FOLD_VERSION,
                state=dumps(folds),
            )
        ],
        ignore_conflicts=True,  # a redelivered copy's batch: the run's summary reads the rows
    )


def discard_folds(run_id: int) -> None:
    """Forget a run's folds: its results changed outside its batches (a human verdict, a
    re-replay), so its summary must be made from the rows."""
    SummaryFold.objects.filter(run_id=run_id).delete()


def summary_from_folds(run: AuditRun, done_traces: int) -> dict[str, Any] | None:
    """The run summary from its batches' folds, or None where they cannot give it exactly:
    they must cover its ``done_traces`` once each, one after the other in trace order, and
    all come from this code."""
    merged: dict[str, PolicyFold] = {}
    covered, last = 0, None
    rows = (
        SummaryFold.objects.filter(run=run)
        .order_by("first_trace")
        .values_list("first_trace", "last_trace", "traces", "version", "state")
    )
    try:
        for first, last_trace, traces, version, state in rows.iterator(chunk_size=200):
            if version != FOLD_VERSION or (last is not None and first <= last):
                return None
            covered, last = covered + traces, last_trace
            for policy, fold in loads(bytes(state)).items():
                if policy in merged:
                    merged[policy].merge(fold)
                else:
                    merged[policy] = fold
    except Exception as exc:  # noqa: BLE001 — a fold not read or merged: the rows are right
        # (NotMergeable, a refused or broken pickle, a fold of another policy under its key)
        log.warning("run %s: summary from its rows (folds: %r)", run.pk, exc)
        return None
    if covered != done_traces:
        return None
    n_boot = django_settings.TA_SUMMARY_BOOTSTRAP
    return {p: (merged.get(p) or PolicyFold(p)).result(n_boot=n_boot) for p in run.policies}
