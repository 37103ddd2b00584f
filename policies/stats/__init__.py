"""Statistics and run reports over the engine's results (SPEC §5.5); imports no policy package.

- `methods`: bootstrap intervals, McNemar, Holm, agreement, ROC-AUC, AP, Brier, reliability;
- `delta`: Δ that never hides an unknown (`delta_report`, `success_counts`);
- `report`: `summarise_run`, `PolicyFold`, `RunSummary`, `annotation_queue`;
- `paper_tables`: each policy's table in the shape of its paper;
- `checklist_metrics`: the Claim Checklist's feedback rates and calibration;
- `twincheck_report`: TwinCheck's tables and gate scores (`twincheck_report`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .delta import delta_report, success_counts
    from .paper_tables import checklist_table, vrr_table
    from .report import PolicyFold, RunSummary, annotation_queue, summarise_run
    from .twincheck_report import twincheck_report

#: Public name -> the module in this package that defines it, imported on first use (PEP 562),
#: so importing one module of the package does not import the others.
_EXPORTS = {
    "PolicyFold": "report",
    "RunSummary": "report",
    "annotation_queue": "report",
    "checklist_table": "paper_tables",
    "delta_report": "delta",
    "success_counts": "delta",
    "summarise_run": "report",
    "twincheck_report": "twincheck_report",
    "vrr_table": "paper_tables",
}

__all__ = [
    "PolicyFold",
    "RunSummary",
    "annotation_queue",
    "checklist_table",
    "delta_report",
    "success_counts",
    "summarise_run",
    "twincheck_report",
    "vrr_table",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS)
