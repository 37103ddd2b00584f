"""VRR noise parameters per (model, verifier) group, estimated from a run's traces before its
work starts (SPEC §5.3 calibration)."""

from __future__ import annotations

from collections import defaultdict

from django.conf import settings as django_settings

from auditor.runs.models import AuditRun, Calibration
from policies.jsonsafe import json_safe
from policies.trace import Trace as PTrace
from policies.vrr_calibration import calibrate, observations_from_traces
from traces.models import Event, Trace
from traces.selectors import load_events


def verifier_of(events: list[dict]) -> str:
    for ev in events:
        if ev.get("type") == "verification":
            v = ev.get("verifier")
            return v if isinstance(v, str) else ""
    return ""


def run_calibrate(run: AuditRun, trace_ids: list[int]) -> None:
    """VRR noise parameters per (model, verifier) group, from the run's traces that hold
    verification votes (SPEC §5.3 calibration)."""
    with_votes = list(
        Event.objects.filter(trace_id__in=trace_ids, type="verification")
        .values_list("trace_id", flat=True)
        .distinct()
    )
    groups: dict[tuple[str, str], list[PTrace]] = defaultdict(list)
    models = dict(Trace.objects.filter(pk__in=with_votes).values_list("pk", "model"))
    for start in range(0, len(with_votes), 500):
        part = with_votes[start : start + 500]
        for tid, events in load_events(part).items():
            groups[(models.get(tid) or "", verifier_of(events))].append(PTrace.from_events(events))
    for (model, verifier), traces in groups.items():
        obs, transitions = observations_from_traces(traces)
        if not obs:
            continue
        cal = calibrate(obs, transitions, n_boot=django_settings.TA_CALIBRATION_BOOTSTRAP, seed=0)
        # NaN (an unidentified α, β) becomes null: jsonb, and JSON itself, have no NaN.
        params = json_safe({**cal.to_dict(), "samples": [s.to_dict() for s in cal.samples]})
        Calibration.objects.update_or_create(
            run=run,
            model=model,
            verifier=verifier,
            defaults={"traces": len(traces), "observations": cal.n_observations, "params": params},
        )
