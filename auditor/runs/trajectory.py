"""Guarded trajectories as stored: the suffix from where they leave the trace, with its start.

A guarded trajectory is the trace's recorded prefix, the accepted replacement and what followed
it (policies.replay), so a full copy repeats events the database already holds — for a long
trace most of its bytes, written with every result (issue 17: that copy was a quarter of a
run's time). A result stores ``guarded_from`` = k and ``guarded_trajectory`` = the trajectory
from index k on; `full_trajectory` gives the whole back from the trace's events.

k is the longest common prefix of the trajectory and the trace's *stored* events (not the
events the auditor saw, which may carry labels the run applied): the prefix read back is then
the trajectory's own prefix by construction, whatever changed the events before the audit.
Rows stored before this form have ``guarded_from`` NULL and hold the full trajectory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auditor.runs.models import AuditResult
from traces.models import Event


def split_trajectory(
    events: Sequence[Any], trajectory: list[Any] | None
) -> tuple[int | None, list[Any] | None]:
    """(k, suffix) with ``trajectory == events[:k] + suffix``; (None, None) for no trajectory
    (the guarded trajectory is the actor's)."""
    if trajectory is None:
        return None, None
    k, n = 0, min(len(events), len(trajectory))
    while k < n and trajectory[k] == events[k]:
        k += 1
    return k, trajectory[k:]


def full_trajectory(result: AuditResult, events: Sequence[Any] | None = None) -> list[Any] | None:
    """The whole guarded trajectory of a stored result (None when it is the actor's).
    ``events``: the trace's event payloads in order, if the caller holds them already (else
    one query reads the prefix)."""
    suffix = result.guarded_trajectory
    if suffix is None:
        return None
    start = result.guarded_from
    if not start:  # a row from before the suffix form (full copy), or diverging at once
        return list(suffix)
    if events is None:
        events = list(
            Event.objects.filter(trace_id=result.trace_id)
            .order_by("seq")
            .values_list("payload", flat=True)[:start]
        )
    return [*events[:start], *suffix]
