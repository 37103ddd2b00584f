"""TwinCheck's structural checks on a twin (SPEC §5.1 step 2) and the counterbalanced switch
gate (step 3, Fig. 1).

Structural checks: the tool exists and was offered to the agent at that turn (BFCL hides
excluded and not-yet-added functions), the arguments validate against its schema, every argument
value is grounded in the trace (a user message, a tool result, or — this project's reading of
"grounded" for constants of the tool itself — one of the parameter's enumerated values), and the
twin differs from the actor's call. Values the twin carries unchanged from the actor's call
are not checked for grounding (they are the actor's, and Fig. 6's twin "preserves the remainder
of the proposed call"); the record lists them as ``carried``. With no tool inventory in the
header the existence and schema checks are skipped (``None``), not failed.

The gate replaces the actor's call only if in **both** orders the judge prefers the twin, marks
the actor's call fatal and the twin non-fatal, with confidence ≥ ``min_confidence`` and rubric
margin ≥ ``min_margin``. A judge error, an abstention or a pair awaiting human review keeps the
actor's call, with the reason recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..certificates import Twin
from ..facts import TraceFacts, canonical_args
from ..judges import AWAITING_REVIEW, Verdict
from ..schema import validate
from ..tool_profile import ToolProfile, enum_values
from ..trace import JsonDict, ToolCall


class GateSettings(Protocol):
    @property
    def min_confidence(self) -> float: ...
    @property
    def min_margin(self) -> float: ...


@dataclass(frozen=True, slots=True)
class GateDecision:
    replace: bool
    reason: str
    orientations: list[dict[str, Any]]
    awaiting_review: tuple[str, ...] = ()  # orientations still without a human verdict
    abstained: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "replace": self.replace,
            "reason": self.reason,
            "orientations": self.orientations,
            "awaiting_review": list(self.awaiting_review),
            "abstained": self.abstained,
        }


def in_twin_terms(v: Verdict, twin_side: str) -> dict[str, Any]:
    """A verdict re-expressed as "twin" and "actor" instead of A and B."""
    actor_side = "B" if twin_side == "A" else "A"
    score = {"A": v.score_a, "B": v.score_b}
    fatal = {"A": v.fatal_a, "B": v.fatal_b}
    return {
        "prefers_twin": v.prefer == twin_side,
        "actor_fatal": fatal[actor_side],
        "twin_fatal": fatal[twin_side],
        "margin": score[twin_side] - score[actor_side],
        "confidence": v.confidence,
        "error": v.error,
        "abstained": v.abstained,
        "reason": v.reason,
    }


def switch_gate(actor_first: Verdict, twin_first: Verdict, settings: GateSettings) -> GateDecision:
    """The counterbalanced gate (module docstring). Otherwise the actor's call stands."""
    views = [in_twin_terms(actor_first, "B"), in_twin_terms(twin_first, "A")]
    names = ("actor_first", "twin_first")
    for name, v in zip(names, views, strict=True):
        v["orientation"] = name
    awaiting = tuple(
        n
        for n, v in zip(names, views, strict=True)
        if v["abstained"] and v["reason"] == AWAITING_REVIEW
    )
    if awaiting:
        return GateDecision(
            False, f"{AWAITING_REVIEW} ({', '.join(awaiting)})", views, awaiting, abstained=True
        )
    for name, v in zip(names, views, strict=True):
        if v["error"]:
            return GateDecision(False, f"judge error ({name}): {v['error']}", views)
        if v["abstained"]:
            why = f": {v['reason']}" if v["reason"] else ""
            return GateDecision(False, f"judge abstained ({name}){why}", views, abstained=True)
    for name, v in zip(names, views, strict=True):
        if not v["prefers_twin"]:
            return GateDecision(False, f"judge does not prefer the twin ({name})", views)
        if not v["actor_fatal"]:
            return GateDecision(False, f"actor's call not marked fatal ({name})", views)
        if v["twin_fatal"]:
            return GateDecision(False, f"twin marked fatal ({name})", views)
        if v["confidence"] < settings.min_confidence:
            return GateDecision(
                False, f"confidence {v['confidence']} < {settings.min_confidence} ({name})", views
            )
        if v["margin"] < settings.min_margin:
            return GateDecision(
                False, f"margin {v['margin']} < {settings.min_margin} ({name})", views
            )
    return GateDecision(True, "both orders prefer the twin, actor fatal, twin non-fatal", views)


def _grounded(value: Any, schema: Any, facts: TraceFacts) -> bool:
    if facts.grounded(value):
        return True
    options = enum_values(schema)
    if isinstance(value, list):
        return all(facts.grounded(x) or x in options for x in value)
    return value in options


def structural_checks(
    twin: Twin, call: ToolCall, facts: TraceFacts, profile: ToolProfile
) -> JsonDict:
    """The checks of SPEC §5.1 step 2 (module docstring); ``passed`` sums them up."""
    out: JsonDict = {
        "tool_exists": None,
        "available": None,
        "schema_valid": None,
        "schema_errors": [],
        "grounded": True,
        "ungrounded": [],
        "differs": True,
    }
    if twin.kind == "call":
        props: dict[str, Any] = {}
        if profile.tools:
            tool = profile.tools.get(twin.name)
            out["tool_exists"] = tool is not None
            out["available"] = profile.available(twin.name, call.turn)
            if tool is not None:
                errors = validate(twin.arguments, tool.parameters or {"type": "object"})
                out["schema_errors"] = errors
                out["schema_valid"] = not errors
                props = tool.properties()
            else:
                out["schema_valid"] = False
        # A value the twin carries unchanged from the actor's call (Fig. 6: "preserves the
        # remainder of the proposed call") is the actor's, not the twin's invention.
        carried = [k for k, v in twin.arguments.items() if call.arguments.get(k, ...) == v]
        ungrounded = [
            k
            for k, v in twin.arguments.items()
            if k not in carried and not _grounded(v, props.get(k), facts)
        ]
        out["carried"] = carried
        out["ungrounded"] = ungrounded
        out["grounded"] = not ungrounded
        out["differs"] = not (
            twin.name == call.name
            and canonical_args(twin.arguments) == canonical_args(call.arguments)
        )
    out["passed"] = (
        out["tool_exists"] is not False
        and out["available"] is not False
        and out["schema_valid"] is not False
        and out["grounded"]
        and out["differs"]
    )
    return out


def failed_checks(checks: JsonDict) -> Sequence[str]:
    """The names of the structural checks that failed, for a human-readable reason."""
    return [
        k for k in ("tool_exists", "schema_valid", "grounded", "differs") if checks.get(k) is False
    ]
