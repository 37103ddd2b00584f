"""One outcome word per trace, the same in the trace header and the traces list: the actor's
outcome as an audit established it (replayed in an environment, or a label the audit read) where
one is known, else the outcome recorded in the uploaded file — marked as recorded, so "unknown"
in the header never sits beside an audit that says the actor failed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from auditor.runs.models import AuditResult


def _word(value: bool | None) -> str:
    return "unknown" if value is None else "success" if value else "failure"


def shown_outcome(
    *, recorded: bool | None, audited: bool | None, run_id: int | None = None
) -> dict[str, Any]:
    if audited is not None:
        return {"word": _word(audited), "source": "audit", "run": run_id}
    return {"word": _word(recorded), "source": "recorded", "run": None}


def audited_outcomes(*, run_id: int, trace_ids: Iterable[int]) -> dict[int, bool]:
    """The actor outcome the run found per trace (the first known over its policies)."""
    out: dict[int, bool] = {}
    rows = AuditResult.objects.filter(
        run_id=run_id, trace_id__in=list(trace_ids), actor_success__isnull=False
    ).values_list("trace_id", "actor_success")
    for trace_id, value in rows:
        out.setdefault(trace_id, value)
    return out
