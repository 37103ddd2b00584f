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

__all__ = [
    "AnnotationItem",
    "AnnotationQueue",
    "AuditItem",
    "AuditResult",
    "AuditRun",
    "Calibration",
    "ExecutionResult",
    "Export",
    "ModelCallRecord",
    "ModelEndpoint",
    "ResultOverride",
    "RunModelUsage",
    "Verdict",
]
