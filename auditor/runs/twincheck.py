"""TwinCheck's report on the run page (policies.stats.twincheck_report, stored in the run summary),
shaped for `templates/auditor/run_twincheck.html`, and the pairs still awaiting review."""

from __future__ import annotations

from typing import Any

from auditor.runs.models import AuditRun
from policies.stats.twincheck_report import COUNTS


def twincheck_display(run: AuditRun) -> dict[str, Any] | None:
    report = ((run.summary or {}).get("twincheck") or {}).get("report")
    if not report:
        return None
    per = report.get("per_certificate") or {}
    names = [n for n in per if n != "all"] + (["all"] if "all" in per else [])
    return {
        "columns": [c.replace("_", " ") for c in COUNTS],
        "rows": [{"name": n, "cells": [per[n].get(c, 0) for c in COUNTS]} for n in names],
        "gate": report.get("gate") or {},
        "rejections": report.get("rejections") or {},
        "continuations": report.get("continuations") or {},
        "awaiting_review": report.get("awaiting_review", 0),
        "abstained": (per.get("all") or {}).get("abstained", 0),
    }
