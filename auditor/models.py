"""Django finds an app's models through this module. The auditor app's models live in its
sub-packages, by what they do; their tables, the app label `auditor` and the migration history
are those they always had."""

from auditor.annotation.models import AnnotationItem, AnnotationQueue, ResultOverride, Verdict
from auditor.exports.models import Export
from auditor.llm.models import ModelCallRecord, ModelEndpoint, RunModelUsage
from auditor.runs.models import (
    AuditItem,
    AuditResult,
    AuditRun,
    Calibration,
    ExecutionResult,
)
from auditor.trace_list.models import ListColumns, SavedView
from auditor.trace_notes.models import TraceComment, TraceTag

__all__ = [
    "AnnotationItem",
    "AnnotationQueue",
    "AuditItem",
    "AuditResult",
    "AuditRun",
    "Calibration",
    "ExecutionResult",
    "ListColumns",
    "Export",
    "ModelCallRecord",
    "ModelEndpoint",
    "ResultOverride",
    "RunModelUsage",
    "SavedView",
    "TraceComment",
    "TraceTag",
    "Verdict",
]
