"""Reasons, read from a trace's header, why its outcome cannot be known at all.

An importer that can tell a recorded run was made on another task than the one the
environment would score it against says so in the header (BFCL: `meta.task_drift`, the run's
recorded user turns differ from the installed bfcl-eval task of that id; `meta.task_not_found`,
the installed release has no task of that id; `meta.ground_truth_changed`, the releases a run
of an earlier release may come from score its task differently; `meta.task_unverified`, a run of
an earlier release records no user turn to tell which of its tasks it was run on). Such a run's
outcome — the actor's and every guarded one — is unknown with that reason, never scored against
the installed task (or a release it may not come from).
"""

from __future__ import annotations

from .trace import Trace, TraceHeader

TASK_DRIFT = "task differs from the installed benchmark version"
TASK_NOT_INSTALLED = "task not in the installed benchmark version"
GROUND_TRUTH_CHANGED = "ground truth changed since the run's release"
TASK_UNVERIFIED = "task version unverified: the run records no user turns"


def task_drift_reason(header: TraceHeader) -> str | None:
    """Why the header's task cannot be scored by the installed benchmark, or None."""
    if header.meta.get("task_drift"):
        return TASK_DRIFT
    if header.meta.get("task_not_found"):
        return TASK_NOT_INSTALLED
    if header.meta.get("ground_truth_changed"):
        return GROUND_TRUTH_CHANGED
    if header.meta.get("task_unverified"):
        return TASK_UNVERIFIED
    return None


def outcome_gap(trace: Trace) -> str | None:
    """Why no outcome of ``trace`` can be known (None when nothing in the header says so)."""
    return task_drift_reason(trace.header)
