"""Runs that cannot make progress fail, with the reason, instead of being queued forever.

A chunk that raises (not a transient database error, which its task retries) records the
reason on its run; the stale-work sweep records a run it finds without progress since its last
resume (a worker killed mid-chunk, again and again). One reason `TA_AUDIT_MAX_FAILURES` times in
a row fails the run with that reason, shown on the run page; a new reason starts the count over,
and progress clears it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from auditor.runs.models import AuditRun

MAX_REASON = 500
NO_PROGRESS = "no progress: its worker stopped before finishing a chunk (killed, out of memory?)"


def reason_of(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\x00", "")
    return text[:MAX_REASON]


def record_stall(run_id: int, reason: str) -> bool:
    """Count one failure of `reason` for the run; fail the run at the limit. True when the run
    was failed now."""
    with transaction.atomic():
        run = (
            AuditRun.objects.select_for_update()
            .filter(pk=run_id, status=AuditRun.Status.RUNNING)
            .only("pk", "stall_count", "stall_reason")
            .first()
        )
        if run is None:
            return False
        count = run.stall_count + 1 if run.stall_reason == reason else 1
        limit = settings.TA_AUDIT_MAX_FAILURES
        changes: dict = {"stall_count": count, "stall_reason": reason}
        if count >= limit:
            changes.update(
                status=AuditRun.Status.FAILED,
                finished_at=timezone.now(),
                failure=f"auditing failed {count} times in a row, each time with: {reason}",
            )
        AuditRun.objects.filter(pk=run_id).update(**changes)
        return count >= limit


def check_progress(run: AuditRun) -> bool:
    """At a resume by the sweep: a run without progress since its last resume, whose chunks
    gave no reason, counts a stall; progress clears the count. True when the run was failed."""
    if run.resumed_at_done is not None and run.traces_done <= run.resumed_at_done:
        # a chunk that raised has counted itself; only a silent stop is counted here
        if run.stall_reason in ("", NO_PROGRESS) and record_stall(run.pk, NO_PROGRESS):
            return True
    elif run.stall_count:
        AuditRun.objects.filter(pk=run.pk).update(stall_count=0, stall_reason="")
    AuditRun.objects.filter(pk=run.pk).update(resumed_at_done=run.traces_done)
    return False
