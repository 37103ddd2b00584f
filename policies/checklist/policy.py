"""Pre-reply Claim Checklist as a replay policy (SPEC §4, §5.2; Bui 2026, "Thinking-in-Bets at
Test Time", §3, §4.2–4.5, App. A).

Per feedback message the pre-reply claims record (recorded by the agent, or elicited from a model —
`policies.checklist.claims`) gives per-claim confidences; the rule (`policies.checklist.rule`)
targets the claims the feedback bears on and keeps, asks or fixes. **Evidence only**: without a
pre-reply record with confidences the rule is *not applicable* for that feedback ("no per-claim
confidence") — no constant stands in for a confidence, and per-turn correctness labels
(SYCON-Bench's) are outcomes, never confidences. Where the rule's action differs from what the actor
did, the guarded trajectory diverges at that reply (`policies.checklist.analysis`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..decision import Decision
from ..trace import JsonDict, Trace
from .analysis import analyse_checklist
from .rule import (
    DEFAULT_THETA,
    Action,
    ChecklistSettings,
    Outcome,
    Schedule,
    classify,
    content_words,
    draft_first_audit,
    feedback_action,
    overall_confidence,
    revision_rule,
    schedule_uses_record,
    target_claims,
)

__all__ = [
    "DEFAULT_THETA",
    "Action",
    "ChecklistPolicy",
    "ChecklistSettings",
    "Outcome",
    "Schedule",
    "classify",
    "content_words",
    "draft_first_audit",
    "feedback_action",
    "overall_confidence",
    "revision_rule",
    "schedule_uses_record",
    "target_claims",
]


class ChecklistPolicy:
    """The Claim Checklist as a replay policy (SPEC §4, §5.2)."""

    name = "checklist"

    def __init__(self, settings: ChecklistSettings | None = None) -> None:
        self.settings = settings or ChecklistSettings()
        self._evidence = re.compile(self.settings.evidence_pattern)
        # the report of the last trace seen: `decisions` and `summary` of one replay share it
        self._last: tuple[Trace | None, JsonDict] = (None, {})
        self._settings_dict = self.settings.to_dict()  # once: every record carries it

    def analyse(self, trace: Trace) -> JsonDict:
        if self._last[0] is trace:
            return self._last[1]
        report = analyse_checklist(trace, self.settings, self._evidence, self._settings_dict)
        self._last = (trace, report)
        return report

    def decisions(self, trace: Trace) -> Iterator[Decision]:
        """One decision: at the first reply where the rule's action differs from the actor's
        (exact replay ends there), else none."""
        report = self.analyse(trace)
        div: JsonDict | None = report["divergence"]
        if div is None:
            return
        yield Decision(
            policy=self.name,
            index=int(div["at"]),
            replace=True,
            record={"feedback": div["feedback"]},
            replacement=[div["replacement"]],
            continue_recorded=False,
            guarded_success=div["outcome"],
        )

    def summary(self, trace: Trace, decisions: list[Decision]) -> dict[str, Any]:
        return self.analyse(trace)
