"""The comparison of two audit runs, paired: per policy, the difference of Δ between run A and
run B on the traces both audited (`policies.stats.did`, paired by trace), and how many traces
only one of them has — a difference of Δ over different trace sets is not a comparison of the
guard's settings alone."""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings

from auditor.runs.models import AuditResult, AuditRun
from policies.stats.delta import Pair
from policies.stats.did import TaskSums, add_task, difference_in_differences


def _applicable(run: AuditRun, policy: str) -> tuple[dict[str, TaskSums], set[int]]:
    """The run's applicable results of ``policy`` by trace (their difference range), and every
    trace it has a result of the policy for."""
    tasks: dict[str, TaskSums] = {}
    seen: set[int] = set()
    rows = AuditResult.objects.filter(run=run, policy=policy).values_list(
        "trace_id", "actor_success", "guarded_success", "continuation", "transition"
    )
    for trace, actor, guarded, continuation, transition in rows.iterator(chunk_size=2000):
        seen.add(trace)
        if transition == "not_applicable":
            continue
        low, high = Pair(actor, guarded, continuation == "exact").difference_range()
        add_task(tasks, str(trace), low, high)
    return tasks, seen


def trace_sets(a: AuditRun, b: AuditRun) -> dict[str, int]:
    """How many traces both runs audited and how many only one of them did."""
    ids_a = set(AuditResult.objects.filter(run=a).values_list("trace_id", flat=True).distinct())
    ids_b = set(AuditResult.objects.filter(run=b).values_list("trace_id", flat=True).distinct())
    return {"both": len(ids_a & ids_b), "only_a": len(ids_a - ids_b), "only_b": len(ids_b - ids_a)}


def paired_differences(a: AuditRun, b: AuditRun, policies: list[str]) -> list[dict[str, Any]]:
    """Per policy both runs ran: Δ of A − Δ of B paired over the traces where the policy applied
    in both (``n_tasks``), with the traces it applied to in one run only (``n_only_a``,
    ``n_only_b``) and its results' traces of each run."""
    out = []
    for policy in policies:
        if policy not in a.policies or policy not in b.policies:
            continue
        tasks_a, seen_a = _applicable(a, policy)
        tasks_b, seen_b = _applicable(b, policy)
        d = difference_in_differences(
            tasks_a, tasks_b, n_boot=django_settings.TA_SUMMARY_BOOTSTRAP, seed=0
        )
        ci = d["ci"]
        significance = (
            "none"
            if ci is None
            else ("sig-pos" if ci[0] > 0 else "sig-neg")
            if d["excludes_zero"]
            else "nonsig"
        )
        out.append(
            {
                "policy": policy,
                **d,
                "significance": significance,
                "traces_a": len(seen_a),
                "traces_b": len(seen_b),
            }
        )
    return out
