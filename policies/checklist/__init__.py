"""The Claim Checklist (SPEC §5.2): at a feedback message, keep or revise per claim by the
claims' confidences.

- `policy`: `ChecklistPolicy`, `ChecklistSettings` and the rule's helpers;
- `rule`: `revision_rule`, `target_claims`;
- `analysis`: the feedback events of a trace, classified;
- `claims`: claims records (`merge_elicited`, `fold_text`, `claim_changes`).

Its metrics and paper table are in `policies.stats` (`checklist_metrics`, `paper_tables`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .claims import claim_changes, fold_text, merge_elicited
    from .policy import (
        DEFAULT_THETA,
        ChecklistPolicy,
        ChecklistSettings,
        classify,
        draft_first_audit,
        feedback_action,
        schedule_uses_record,
    )
    from .rule import revision_rule, target_claims

#: Public name -> the module in this package that defines it, imported on first use (PEP 562),
#: so importing one module of the package does not import the others.
_EXPORTS = {
    "ChecklistPolicy": "policy",
    "ChecklistSettings": "policy",
    "DEFAULT_THETA": "policy",
    "claim_changes": "claims",
    "classify": "policy",
    "draft_first_audit": "policy",
    "feedback_action": "policy",
    "fold_text": "claims",
    "merge_elicited": "claims",
    "revision_rule": "rule",
    "schedule_uses_record": "policy",
    "target_claims": "rule",
}

__all__ = [
    "ChecklistPolicy",
    "ChecklistSettings",
    "DEFAULT_THETA",
    "claim_changes",
    "classify",
    "draft_first_audit",
    "feedback_action",
    "fold_text",
    "merge_elicited",
    "revision_rule",
    "schedule_uses_record",
    "target_claims",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS)
