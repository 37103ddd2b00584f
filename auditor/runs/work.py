"""The work of a run: audit a chunk of traces with the policies library, store the results in
one transaction per batch, and finish the run once no trace is pending."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Q, QuerySet
from django.db.models.fields.json import KT
from django.utils import timezone

from auditor.llm.backend import RunBackend
from auditor.runs import lanes
from auditor.runs.calibration import (
    executed_labels,
    has_votes,
    label_events,
    needs_calibration,
    rate_bounds,
    vote_group,
)
from auditor.runs.models import AuditItem, AuditRun, Calibration
from auditor.runs.signals import run_finished
from auditor.runs.store import policy_row, store_results
from auditor.runs.summary import audit_run_summary
from common.jobs import job_heartbeat
from policies import Auditor, Judge
from traces.models import Trace
from traces.selectors import load_events

log = logging.getLogger(__name__)

#: ``progress(traces done, traces to do)`` of one chunk, after each batch is stored.
Progress = Callable[[int, int], None]

#: The last run's `AuditorCache` per thread (`AuditorCache.for_run`).
_kept = threading.local()

#: Traces audited and stored together: one read, one COPY and one update per batch.
BATCH_TRACES = 50


def with_env_name(traces: QuerySet[Trace]) -> QuerySet[Trace]:
    """The traces with what the auditors need of them: the model, and the environment's name
    as ``env_name`` (`AuditorCache.for_trace` picks the environment by it; the policies read
    the header from the trace's events). Whole headers are not loaded: a BFCL header carries tool
    docs, initial config and ground truth, whose stdlib JSON decoding would cost every audit
    time and memory per trace."""
    return traces.only("pk", "model").annotate(env_name=KT("header__env__name"))


class AuditorCache:
    """One `Auditor` per (environment kind, calibration group), built on first use; with a
    model configured, all of them share one `RunBackend` (cache, budget, statistics)."""

    @classmethod
    def for_run(cls, run: AuditRun) -> AuditorCache:
        """The run's auditors, kept by this thread from the run's previous chunk. A run's
        policies, settings and calibration do not change once its chunks are queued (the
        calibration is made before), so building them again for each chunk of a few hundred traces
        — two queries, the auditors, their environments — would be waste; a chunk thus
        audits as a part of one long chunk would. Not kept with a model configured: its backend
        holds a chunk's budget and statistics."""
        key = (run.pk, run.created_at, run.calibrated_at)  # not a chunk's from before it
        kept = getattr(_kept, "auditors", None)
        if kept is not None and kept[0] == key:
            return kept[1]
        auditors = cls(run)
        _kept.auditors = (key, auditors) if auditors.backend is None else None
        return auditors

    def __init__(self, run: AuditRun, judge: Judge | None = None) -> None:
        self.run = run
        self.judge = judge  # instead of the run's (a re-replay with human verdicts)
        self.backend = RunBackend(run) if run.model_settings else None
        self.cals = {(c.model, c.verifier): c.params for c in Calibration.objects.filter(run=run)}
        # labels the calibration executed (project switch): every chunk audits labelled events
        self.executed = executed_labels(run)
        self.cache: dict[tuple, Auditor] = {}

    def for_trace(self, env_name: str | None, model: str, events: list[dict]) -> Auditor:
        """The auditor for a trace: by its environment's name (its header's ``env.name``,
        see `with_env_name`), and for a trace with votes, its calibration group (its model and
        verifier). A trace without votes is in no group: the run's own settings."""
        env_kind = self._env_kind(env_name)
        group = vote_group(model, events) if self.cals else None
        key = (env_kind, group if group in self.cals else None)
        auditor = self.cache.get(key)
        if auditor is None:
            settings = {k: dict(v) for k, v in self.run.settings.items()}
            cal = self.cals.get(group) if group is not None else None
            if cal is not None and not settings.get("vrr", {}).get("params"):
                settings.setdefault("vrr", {}).update(
                    params=cal["params"], samples=cal["samples"], **rate_bounds(cal)
                )
            model: dict[str, Any] = self.backend.auditor_kwargs() if self.backend else {}
            judge = model.pop("judge", self.run.judge)
            auditor = Auditor(
                self.run.policies,
                settings,
                self.judge or judge,
                self._environment(env_kind),
                **model,
            )
            self.cache[key] = auditor
        return auditor

    def _env_kind(self, env_name: str | None) -> str:
        mode = self.run.environment
        if mode == "none":
            return "none"
        name = (env_name or "").lower()
        if mode == "bfcl" or (mode == "auto" and name.startswith("bfcl")):
            return "bfcl" if name.startswith("bfcl") else "none"
        return "none"

    @staticmethod
    def _environment(kind: str):  # type: ignore[no-untyped-def]
        if kind == "bfcl":
            from policies.environments.bfcl import BFCLEnvironment

            return BFCLEnvironment()
        return None


def audit_chunk_process(
    *, run_id: int, trace_ids: Sequence[int], progress: Progress | None = None
) -> int:
    """Audit the still-pending traces among `trace_ids`. Safe to run twice, or at the same
    time as a redelivered copy: results are keyed (run, trace, policy) and inserted with
    ignore_conflicts, and an item is marked done only with its results. ``progress(done,
    total)`` is called after each batch (the CLI's bar for an inline run)."""
    run = AuditRun.objects.filter(pk=run_id).first()
    if run is None or run.status != AuditRun.Status.RUNNING:
        return 0
    pending = sorted(
        AuditItem.objects.filter(
            run=run, trace_id__in=trace_ids, status=AuditItem.Status.PENDING
        ).values_list("trace_id", flat=True)
    )
    if not pending:
        finish_if_complete(run.pk)
        return 0
    traces = {t.pk: t for t in with_env_name(Trace.objects.filter(pk__in=pending))}
    try:
        auditors = AuditorCache.for_run(run)
    except ValueError as exc:  # the endpoint's key cannot be had, or settings this version rejects
        # Every trace of the chunk fails with the reason (the run completes; "Retry failed
        # traces" works once an owner fixes the endpoint's key).
        AuditItem.objects.filter(run=run, trace_id__in=pending).update(
            status=AuditItem.Status.ERROR, error=f"model: {exc}", attempts=F("attempts") + 1
        )
        finish_if_complete(run.pk)
        return 0
    parts = [pending[i : i + BATCH_TRACES] for i in range(0, len(pending), BATCH_TRACES)]
    threaded = lanes.overlap_possible()
    done = 0
    writing: Future[int] | None = None
    try:
        # the next batch's events are read while this one is audited
        for part, events_by_trace in lanes.read_ahead(threaded, load_events, parts):
            if auditors.backend is not None:
                auditors.backend.prefetch(part)
            try:
                batch = _audit_batch(run, [traces[t] for t in part], events_by_trace, auditors)
            finally:
                if auditors.backend is not None:
                    auditors.backend.flush()
            del events_by_trace  # before the next batch's are read ahead, not after
            if writing is not None:  # at most one batch of results waits to be written
                writing.result()
                if progress is not None:
                    progress(done, len(pending))
            writing = lanes.submit("write", threaded, _store_batch, run.pk, batch)
            done += len(part)
    finally:  # a batch handed to the writer is stored (or its error raised) before we return
        if writing is not None:
            writing.result()
    if progress is not None:
        progress(done, len(pending))
    finish_if_complete(run.pk)
    return done


@dataclass(slots=True)
class Batch:
    """A batch's audit, to be stored: its result rows, the traces audited, those that failed."""

    rows: list[dict[str, Any]]
    done: list[int]
    failed: list[tuple[int, str]]


def _audit_batch(
    run: AuditRun,
    traces: list[Trace],
    events_by_trace: dict[int, list[dict]],
    auditors: AuditorCache,
) -> Batch:
    """Audit a batch of traces; a trace whose audit raises is a failed item, not a failed run."""
    batch = Batch([], [], [])
    calibrating = run.calibrated_at is None and needs_calibration(run)
    for trace in traces:
        stored = events_by_trace[trace.pk]  # as the database holds them: see policy_row
        if calibrating and has_votes(stored):
            # VRR would decide it without the run's calibration: it stays pending, for the
            # chunks queued once the calibration is stored (`audit_run_calibrate` if the
            # start died first)
            continue
        events = label_events(stored, auditors.executed)
        try:
            auditor = auditors.for_trace(trace.env_name, trace.model, events)
            elicited = None
            if auditors.backend is not None:
                events, elicited = auditors.backend.prepare(events, run.policies)
                auditors.backend.take_recheck_calls()  # a failed trace's leftovers
            results = auditor.audit(events)
            if auditors.backend is not None:
                _model_refs(results, elicited, auditors.backend.take_recheck_calls())
        except Exception as exc:  # noqa: BLE001 — a bad trace must not stop the run
            log.exception("audit of trace %s in run %s failed", trace.pk, run.pk)
            batch.failed.append((trace.pk, f"{type(exc).__name__}: {exc}"[:4000]))
            continue
        batch.rows.extend(policy_row(run.pk, trace.pk, res, stored) for res in results.values())
        batch.done.append(trace.pk)
    return batch


def _store_batch(run_id: int, batch: Batch) -> int:
    """Store a batch's results and take its items out of pending in one transaction, then
    move the run's done count. Returns how many of its items left pending here (not those a
    redelivered copy finished first)."""
    pending = AuditItem.objects.filter(run_id=run_id, status=AuditItem.Status.PENDING)
    with transaction.atomic():
        store_results(batch.rows)
        finished = pending.filter(trace_id__in=batch.done).update(
            status=AuditItem.Status.DONE, error="", attempts=F("attempts") + 1
        )
        for trace_id, error in batch.failed:
            finished += pending.filter(trace_id=trace_id).update(
                status=AuditItem.Status.ERROR, error=error, attempts=F("attempts") + 1
            )
    # The run page's done count moves by the items this batch took out of pending — not a
    # count of the run's items per batch, which grows with the run (O(n²) over a run).
    job_heartbeat(AuditRun.objects.filter(pk=run_id), traces_done=F("traces_done") + finished)
    return finished


def _model_refs(results: dict, elicited: dict | None, recheck: list[dict]) -> None:
    """The model calls a policy's record should reference but its policy does not keep."""
    if elicited is not None and "checklist" in results:
        results["checklist"].record["elicited_claims"] = elicited
    if recheck and "commit" in results:
        results["commit"].record["recheck_calls"] = recheck


def finish_if_complete(run_id: int) -> bool:
    """Mark the run done once no item is pending — exactly once, by a conditional update —
    and compute its run-level tables."""
    if AuditItem.objects.filter(run_id=run_id, status=AuditItem.Status.PENDING).exists():
        return False
    counts = AuditItem.objects.filter(run_id=run_id).aggregate(
        done=Count("id", filter=~Q(status=AuditItem.Status.PENDING)),
        errors=Count("id", filter=Q(status=AuditItem.Status.ERROR)),
    )
    run = AuditRun.objects.get(pk=run_id)
    running = AuditRun.objects.filter(pk=run_id, status=AuditRun.Status.RUNNING)
    if run.status != AuditRun.Status.RUNNING:
        # finished already (a chunk redelivered after the end): only the conditional update
        # below could have used a summary, and it would not take it
        return False
    t0 = time.perf_counter()
    summary = audit_run_summary(run)
    # the summary's own time beside the start's (benchmarks and slow-run reports read it)
    timings = {**(run.timings or {}), "summary_s": round(time.perf_counter() - t0, 3)}
    now = timezone.now()
    finished = bool(
        running.update(
            status=AuditRun.Status.DONE,
            finished_at=now,
            heartbeat_at=now,
            summary=summary,
            timings=timings,
            traces_done=counts["done"],
            error_count=counts["errors"],
        )
    )
    del summary  # written: not held while the receivers run
    if finished:
        # without its summary, which no receiver reads (the whole JSON again)
        run_finished.send(sender=AuditRun, run=AuditRun.objects.defer("summary").get(pk=run_id))
    return finished
