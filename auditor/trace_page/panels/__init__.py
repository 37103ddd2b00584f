"""One panel per policy on the trace page, and the registry the view and the templates read.

A panel is built from the policy's decision record and, where it needs them, some of the trace's
events (claim texts, VRR votes); each policy's builder lives in its own module. Adding a policy's
panel is one entry here plus its module and template — the view and `trace_panel.html` loop over
the registry and never name a policy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from auditor.trace_page.panels.checklist import checklist_panel
from auditor.trace_page.panels.commit import commit_panel
from auditor.trace_page.panels.twincheck import twincheck_panel
from auditor.trace_page.panels.vrr import vrr_panel

Builder = Callable[[Mapping[str, Any], Iterable[Mapping[str, Any]]], dict[str, Any]]


@dataclass(frozen=True)
class Panel:
    policy: str
    title: str
    not_applied: str  # what "not applied" means for this policy (docs/policies.md, `applied`)
    event_types: tuple[str, ...]  # event types the builder reads besides the record
    template: str
    build: Builder
    # Positions in the ordered trace (0-based) of events the builder reads besides those of
    # `event_types`, from the record; they reach the builder with their "_position".
    positions: Callable[[Mapping[str, Any]], list[int]] = lambda record: []


def _panel(
    policy: str,
    title: str,
    not_applied: str,
    types: tuple[str, ...],
    build: Builder,
    positions: Callable[[Mapping[str, Any]], list[int]] | None = None,
) -> Panel:
    template = f"auditor/trace_panel_{policy}.html"
    if positions is None:
        return Panel(policy, title, not_applied, types, template, build)
    return Panel(policy, title, not_applied, types, template, build, positions)


def _answer_positions(record: Mapping[str, Any]) -> list[int]:
    """The commit rule's answers as the model wrote them: the record keeps normalised keys."""
    at = record.get("answer_events")
    return [i for i in at if type(i) is int and i >= 0] if isinstance(at, list) else []


REGISTRY: dict[str, Panel] = {
    p.policy: p
    for p in (
        _panel(
            "twincheck",
            "TwinCheck",
            "No tool call met a certificate's evidence condition.",
            (),
            twincheck_panel,
        ),
        _panel(
            "checklist",
            "Claim checklist",
            "No feedback message to answer.",
            ("claims",),
            checklist_panel,
        ),
        _panel(
            "vrr",
            "VRR stop point",
            "No verified repair round: not a verify-repair loop.",
            ("candidate", "verification"),
            vrr_panel,
        ),
        _panel(
            "commit",
            "Commit rule",
            "No answer followed by a challenge.",
            (),
            commit_panel,
            _answer_positions,
        ),
    )
}


def _no_panel(record: Mapping[str, Any], events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    return {"missing": []}


def panel_for(policy: str) -> Panel:
    """The policy's panel; a policy this page does not know (a newer run) shows its raw record."""
    return REGISTRY.get(policy) or Panel(
        policy, policy, "No decision point in this trace.", (), "", _no_panel
    )


def event_types(policies: Iterable[str]) -> set[str]:
    """The event types the panels of these policies read."""
    return {t for p in policies for t in panel_for(p).event_types}


__all__ = [
    "REGISTRY",
    "Panel",
    "checklist_panel",
    "commit_panel",
    "event_types",
    "panel_for",
    "twincheck_panel",
    "vrr_panel",
]
