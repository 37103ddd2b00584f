"""VRR noise parameters per (model, verifier) group, estimated from a run's traces before its
work starts (SPEC §5.3 calibration), and — where the project's owner switched it on — the labels
of code candidates executed against their hidden tests in the sandbox.

Execution happens here, in `audit_run_start`, which runs in a Celery worker (or in the CLI's
inline audit): never in the web process, which only queues runs. The executed labels are kept
with the group's calibration so the run's chunks apply the same labels to the events they
audit (`executed_labels`, `label_events`).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings as django_settings
from django.db import connection

from auditor.runs import lanes
from auditor.runs.execution_store import project_results
from auditor.runs.models import AuditRun, Calibration
from common.jobs import job_heartbeat
from policies.jsonsafe import json_safe
from policies.labels import CandidateLabel, LabelKey, apply_labels
from policies.sandbox import UNAVAILABLE, SandboxSettings
from policies.sandbox.code_tests import execute_hidden_tests
from policies.trace import Trace as PTrace
from policies.vrr.evidence import MIN_TRANSITIONS
from traces.models import Event, Trace
from traces.selectors import load_events

# policies.vrr.calibration (and numpy under it, slow to import) is imported where a group is
# calibrated, not here: every process imports this module at Django start (runs.work, the apps'
# signal receivers), and only runs whose traces hold verification votes use it.

# Why α and β are missing when the project does not execute code: the loops' records label only
# their final candidate, so no labelled transition exists to estimate them from.
NO_EXECUTION_LABELS = "no execution labels"


def executes_code(run: AuditRun) -> bool:
    """Whether the run's start executes code candidates: the project's switch is on and the
    project may have it (`Project.execution_refusal`: checked again here, so a creator who has
    left the staff or a changed operator setting stops execution at the next run)."""
    project = run.project
    return bool(project.execute_code_candidates) and project.execution_refusal is None


def verifier_of(events: list[dict]) -> str:
    """The verifier named by a trace's first verification event ("" if none names one)."""
    group = vote_group("", events)
    return group[1] if group is not None else ""


def has_votes(events: list[dict]) -> bool:
    """Whether the trace holds a verification event: a verify-repair loop, which the run's
    calibration covers (`traces_with_votes` is the same test in SQL)."""
    return vote_group("", events) is not None


def vote_group(model: str, events: list[dict]) -> tuple[str, str] | None:
    """The (model, verifier) calibration group of a trace with votes (verifier "" if its first
    verification event names none); None for a trace without votes, which is in no group."""
    for ev in events:
        if ev.get("type") == "verification":
            v = ev.get("verifier")
            return model, v if isinstance(v, str) else ""
    return None


def rate_bounds(stored: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A stored calibration's exact intervals of α and β as `VrrSettings.rate_lower` /
    ``rate_upper`` (null ends where a rate has no transitions at all)."""
    intervals = stored.get("intervals") or {}
    ends: dict[str, dict[str, Any]] = {"rate_lower": {}, "rate_upper": {}}
    for name in ("alpha", "beta"):
        pair = intervals.get(name)
        lo, hi = pair if isinstance(pair, list | tuple) and len(pair) == 2 else (None, None)
        ends["rate_lower"][name], ends["rate_upper"][name] = lo, hi
    return ends


def needs_calibration(run: AuditRun) -> bool:
    """Whether the run's start calibrates VRR: it audits VRR without parameters of its own."""
    return "vrr" in run.policies and not (run.settings.get("vrr") or {}).get("params")


def sandbox_settings() -> SandboxSettings:
    return SandboxSettings(enabled=True, timeout_s=float(django_settings.TA_SANDBOX_TIMEOUT))


def _encode(labels: Mapping[LabelKey, CandidateLabel]) -> dict[str, dict[str, list[Any]]]:
    out: dict[str, dict[str, list[Any]]] = defaultdict(dict)
    for (tid, cid), lab in labels.items():
        out[tid][cid] = [lab.valid, lab.detail]
    return dict(out)


def executed_labels(run: AuditRun) -> dict[LabelKey, CandidateLabel]:
    """The labels the run's calibration executed, keyed (trace id, candidate id)."""
    out: dict[LabelKey, CandidateLabel] = {}
    for params in Calibration.objects.filter(run=run).values_list("params", flat=True):
        stored = ((params or {}).get("execution") or {}).get("labels") or {}
        for tid, cands in stored.items():
            for cid, (valid, detail) in cands.items():
                known = None if valid is None else bool(valid)  # None: sandbox unavailable
                out[(tid, cid)] = CandidateLabel(known, "executed", str(detail))
    return out


def label_events(events: list[dict], labels: Mapping[LabelKey, CandidateLabel]) -> list[dict]:
    """`events` with executed labels applied (recorded labels win; policies.labels)."""
    return apply_labels(events, labels).events if labels else events


def _has_hidden_tests(events: list[dict]) -> bool:
    head = events[0] if events else {}
    labels = head.get("labels") if isinstance(head.get("labels"), dict) else {}
    return bool(labels.get("hidden_tests"))


class Group:
    """One (model, verifier) group's calibration input, read a part of the run at a time: what
    the calibration reads of its vote observations and transitions (a `VoteTally`: distinct
    rows, loop shapes, a byte per transition), not its traces' events — holding those grows
    the start's worker with the run's size — nor each observation, as objects or as columns
    (which also need as much again to sort them at calibration). The events are kept only to
    execute candidates."""

    def __init__(self) -> None:
        from policies.vrr.calibration import VoteTally

        self.tally = VoteTally()
        self.events: list[list[dict]] = []
        self.traces = 0
        self.hidden_tests = False

    def add(self, events: list[dict], *, keep: bool) -> None:
        if keep:  # executed labels change the observations: tallied after execution
            self.events.append(events)
        else:
            self.tally.add_trace(PTrace.from_events(events))
        self.hidden_tests = self.hidden_tests or _has_hidden_tests(events)
        self.traces += 1


#: Traces whose events are read (and tallied) at a time: a part's events are the calibration's
#: peak, and the heap a larger part leaves behind stays with the worker.
CALIBRATION_PART = 100


#: Seconds between the calibration's heartbeats (the sweep's TA_STALE_SECONDS is 120 s).
HEARTBEAT_S = 10.0


#: Trace ids read, or sent to PostgreSQL as one array parameter, at a time (here and by
#: `services` for the run's ids and items).
ID_PART = 10_000


def traces_with_votes(trace_ids: Sequence[int]) -> list[int]:
    """The traces among `trace_ids` that hold a verification event, in trace order: the
    bootstrap resamples loops by their index in the group, and an unordered DISTINCT comes back
    in another order when the plan changes (as it does for large runs). On PostgreSQL the ids
    go as array parameters of ID_PART: the ORM's ``IN`` list of one placeholder per id grows
    the start's worker with the run's size for the moment of the query, far more than an
    array does."""
    if connection.vendor != "postgresql":
        return list(
            Event.objects.filter(trace_id__in=trace_ids, type="verification")
            .values_list("trace_id", flat=True)
            .distinct()
            .order_by("trace_id")
        )
    out: list[int] = []
    with connection.cursor() as cur:
        for start in range(0, len(trace_ids), ID_PART):
            cur.execute(
                f"SELECT DISTINCT trace_id FROM {Event._meta.db_table} "
                "WHERE trace_id = ANY(%s) AND type = %s",
                [list(trace_ids[start : start + ID_PART]), "verification"],
            )
            out.extend(tid for (tid,) in cur)
    return sorted(out)


def _part_input(part: Sequence[int]) -> tuple[dict[int, str], dict[int, list[dict]]]:
    """A part's traces' models and events. A part's models, not the run's: the run's would be
    held through the start, growing with its size."""
    models = dict(Trace.objects.filter(pk__in=part).values_list("pk", "model"))
    return models, load_events(part)


def run_calibrate(
    run: AuditRun,
    trace_ids: Sequence[int],
    *,
    with_votes: Sequence[int] | None = None,
) -> None:
    """VRR noise parameters per (model, verifier) group, from the run's traces that hold
    verification votes (SPEC §5.3 calibration; ``with_votes``: those traces, if the caller
    found them already), after executing code candidates when the project says so."""
    execute = executes_code(run)
    if with_votes is None:
        with_votes = traces_with_votes(trace_ids)
    groups = tally_groups(run, with_votes, execute=execute)
    store_calibrations(run, groups, execute=execute)


def tally_groups(
    run: AuditRun, with_votes: Sequence[int], *, execute: bool
) -> dict[tuple[str, str], Group]:
    """The loops ``with_votes`` read a part at a time and tallied per (model, verifier) group,
    in order of first occurrence (their events kept instead, to ``execute`` candidates)."""
    groups: dict[tuple[str, str], Group] = defaultdict(Group)
    parts = [
        with_votes[start : start + CALIBRATION_PART]
        for start in range(0, len(with_votes), CALIBRATION_PART)
    ]
    # The next part is read on the process's read lane while this one is tallied, as a chunk
    # reads its next batch (auditor.runs.lanes): the reads are a large share of the calibration.
    beat = time.monotonic()
    for _, (models, events_by_trace) in lanes.read_ahead(
        lanes.overlap_possible(), _part_input, parts
    ):
        for tid, events in events_by_trace.items():
            model = models.get(tid) or ""
            # every trace here has votes (`traces_with_votes`): its group is never None
            groups[vote_group(model, events) or (model, "")].add(events, keep=execute)
        del events_by_trace  # not held while the next part is awaited
        if time.monotonic() - beat > HEARTBEAT_S:
            # a long calibration (a large run: minutes) is not a dead start to the sweep,
            # which would calibrate the run again beside it (`audit_run_calibrate`)
            job_heartbeat(AuditRun.objects.filter(pk=run.pk))
            beat = time.monotonic()
    return groups


def store_calibrations(
    run: AuditRun, groups: Mapping[tuple[str, str], Group], *, execute: bool
) -> None:
    """Each group's calibration (after executing its candidates, with ``execute``)."""
    vrr_settings = run.settings.get("vrr") or {}
    min_evidence = int(vrr_settings.get("min_evidence") or MIN_TRANSITIONS)
    for (model, verifier), group in groups.items():
        execution: dict[str, Any] | None = None
        if execute:
            labels, counts = execute_hidden_tests(
                group.events,
                sandbox_settings(),
                workers=django_settings.TA_SANDBOX_WORKERS,
                store=project_results(run.project_id),
            )
            labelled = [label_events(events, labels) for events in group.events]
            known = sum(lab.valid is not None for lab in labels.values())
            execution = {"counts": counts, "labelled": known, "labels": _encode(labels)}
            unavailable = next(
                (lab.detail for lab in labels.values() if lab.detail.startswith(UNAVAILABLE)),
                None,
            )
            if unavailable:
                execution["unavailable"] = unavailable
            for events in labelled:
                group.tally.add_trace(PTrace.from_events(events))
        if not len(group.tally):
            continue
        cal = group.tally.calibrate(
            n_boot=django_settings.TA_CALIBRATION_BOOTSTRAP, seed=0, min_evidence=min_evidence
        )
        # NaN (an unidentified α, β) becomes null: jsonb, and JSON itself, have no NaN.
        params = json_safe({**cal.to_dict(), "samples": [s.to_dict() for s in cal.samples]})
        if execution is not None:
            params["execution"] = execution
        unidentified = any(math.isnan(getattr(cal.params, k)) for k in ("alpha", "beta"))
        if not execute and unidentified and group.hidden_tests:
            params["not_applicable"] = NO_EXECUTION_LABELS
        elif execution is not None and unidentified and execution.get("unavailable"):
            params["not_applicable"] = execution["unavailable"]
        Calibration.objects.update_or_create(
            run=run,
            model=model,
            verifier=verifier,
            defaults={
                "traces": group.traces,
                "observations": cal.n_observations,
                "params": params,
            },
        )
