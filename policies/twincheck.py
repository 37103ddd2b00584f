"""TwinCheck: negative-twin replacement of tool calls (SPEC §5.1; Dai & Huang 2026).

For each ``tool_call`` in order: (1) a certificate must hold (`certificates`); (2) the twin
must pass structural checks; (3) the judge must prefer the twin in **both** A/B orders, mark
the actor's call fatal and the twin non-fatal, with confidence ≥ ``min_confidence`` and rubric
margin ≥ ``min_margin`` (`switch_gate`); (4) everything is recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .certificates import CERTIFICATES, COMPLETION_TEXT, Hit, Twin
from .decision import Decision
from .facts import TraceFacts, canonical_args
from .judges import HeuristicJudge, Judge, PairRequest, Proposal, Verdict
from .schema import validate
from .trace import Event, JsonDict, Message, ToolCall, ToolResult, Trace


@dataclass(frozen=True, slots=True)
class TwinCheckSettings:
    """Gate thresholds and the certificates in use. The paper fixes the protocol (both
    orders, fatal/non-fatal, confidence and 0–4 margin requirements) but the seed does not
    state the numbers; 0.7 and 2 are this project's defaults."""

    min_confidence: float = 0.7
    min_margin: float = 2.0
    certificates: tuple[str, ...] = (
        "inverse_action",
        "repeat_after_error",
        "unique_stale_argument",
    )
    completion_text: str = COMPLETION_TEXT
    context_events: int = 20

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_confidence": self.min_confidence,
            "min_margin": self.min_margin,
            "certificates": list(self.certificates),
            "completion_text": self.completion_text,
            "context_events": self.context_events,
        }


@dataclass(frozen=True, slots=True)
class GateDecision:
    replace: bool
    reason: str
    orientations: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"replace": self.replace, "reason": self.reason, "orientations": self.orientations}


def _in_twin_terms(v: Verdict, twin_side: str) -> dict[str, Any]:
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
    }


def switch_gate(
    actor_first: Verdict, twin_first: Verdict, settings: TwinCheckSettings
) -> GateDecision:
    """The counterbalanced gate (§5.1 step 3, Fig. 1): replace only if in both orders the judge
    prefers the twin, marks the actor fatal and the twin non-fatal, with confidence ≥
    ``min_confidence`` and margin ≥ ``min_margin``. Otherwise the actor's call stands."""
    views = [_in_twin_terms(actor_first, "B"), _in_twin_terms(twin_first, "A")]
    names = ("actor_first", "twin_first")
    for name, v in zip(names, views, strict=True):
        v["orientation"] = name
    for name, v in zip(names, views, strict=True):
        if v["error"]:
            return GateDecision(False, f"judge error ({name}): {v['error']}", views)
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


def structural_checks(twin: Twin, call: ToolCall, facts: TraceFacts, trace: Trace) -> JsonDict:
    """§5.1 step 2: the tool exists, the arguments validate against its schema, every value is
    grounded in the trace, and the twin differs from the actor's call. With no tool inventory
    in the header, existence and schema checks are skipped (``None``), not failed."""
    out: JsonDict = {
        "tool_exists": None,
        "schema_valid": None,
        "schema_errors": [],
        "grounded": True,
        "ungrounded": [],
        "differs": True,
    }
    if twin.kind == "call":
        if trace.header.tools:
            tool = trace.tool(twin.name)
            out["tool_exists"] = tool is not None
            if tool is not None:
                errors = validate(twin.arguments, tool.parameters or {"type": "object"})
                out["schema_errors"] = errors
                out["schema_valid"] = not errors
            else:
                out["schema_valid"] = False
        ungrounded = [k for k, v in twin.arguments.items() if not facts.grounded(v)]
        out["ungrounded"] = ungrounded
        out["grounded"] = not ungrounded
        out["differs"] = not (
            twin.name == call.name
            and canonical_args(twin.arguments) == canonical_args(call.arguments)
        )
    out["passed"] = (
        out["tool_exists"] is not False
        and out["schema_valid"] is not False
        and out["grounded"]
        and out["differs"]
    )
    return out


def render_context(events: list[Event], limit: int) -> str:
    lines: list[str] = []
    for e in events[-limit:]:
        if isinstance(e, Message):
            lines.append(f"{e.role}: {e.content}")
        elif isinstance(e, ToolCall):
            lines.append(f"tool call: {e.name}({canonical_args(e.arguments)})")
        elif isinstance(e, ToolResult):
            lines.append(f"tool result [{e.status}]: {str(e.content)[:500]}")
    return "\n".join(lines)


def _proposal(twin: Twin) -> Proposal:
    return Proposal(twin.kind, twin.name, dict(twin.arguments), twin.text)


class TwinCheckPolicy:
    """TwinCheck as a replay policy (SPEC §4, §5.1)."""

    name = "twincheck"

    def __init__(
        self, settings: TwinCheckSettings | None = None, judge: Judge | None = None
    ) -> None:
        self.settings = settings or TwinCheckSettings()
        self.judge = judge or HeuristicJudge()
        self._settings_dict = self.settings.to_dict()
        self._certs = [(n, CERTIFICATES[n]) for n in self.settings.certificates]

    def certify(self, call: ToolCall, facts: TraceFacts, trace: Trace) -> Hit | None:
        for _name, cert in self._certs:
            hit = cert(call, facts, trace)
            if hit is not None:
                return hit
        return None

    def decide(self, call: ToolCall, hit: Hit, facts: TraceFacts, trace: Trace) -> Decision:
        s = self.settings
        twin = hit.twin
        if twin.kind == "completion":
            twin = Twin("completion", text=s.completion_text)
        checks = structural_checks(twin, call, facts, trace)
        pair_id = f"{trace.trace_id}:{call.call_id or 'e' + str(call.index)}"
        record: JsonDict = {
            "call_index": call.index,
            "call_id": call.call_id,
            "call": {"name": call.name, "arguments": call.arguments},
            "certificate": {"name": hit.certificate, **hit.details},
            "twin": twin.to_dict(),
            "checks": checks,
            "pair": pair_id,
            "judgments": [],
            "gate": None,
            "judge": self.judge.name,
            "settings": self._settings_dict,
        }
        if not checks["passed"]:
            record["gate"] = {
                "replace": False,
                "reason": "twin failed structural checks",
                "orientations": [],
            }
            return Decision(self.name, call.index, False, record)
        actor = Proposal("call", call.name, dict(call.arguments))
        tw = _proposal(twin)
        context = render_context(trace.events[: call.index], s.context_events)
        v1 = self.judge.judge(PairRequest(pair_id, "actor_first", actor, tw, context, trace, facts))
        v2 = self.judge.judge(PairRequest(pair_id, "twin_first", tw, actor, context, trace, facts))
        gate = switch_gate(v1, v2, s)
        record["judgments"] = [
            {"orientation": "actor_first", **v1.to_dict()},
            {"orientation": "twin_first", **v2.to_dict()},
        ]
        record["gate"] = gate.to_dict()
        replacement: list[JsonDict] = []
        meta = {
            "guarded": True,
            "policy": self.name,
            "certificate": hit.certificate,
            "replaces": call.index,
        }
        if twin.kind == "call":
            replacement.append(
                {
                    "trace_id": trace.trace_id,
                    "type": "tool_call",
                    "call_id": f"{call.call_id or call.index}~twin",
                    "name": twin.name,
                    "arguments": dict(twin.arguments),
                    "turn": call.turn,
                    "meta": meta,
                }
            )
        elif twin.kind == "completion":
            replacement.append(
                {
                    "trace_id": trace.trace_id,
                    "type": "message",
                    "role": "assistant",
                    "content": twin.text,
                    "turn": call.turn,
                    "meta": meta,
                }
            )
        return Decision(
            self.name,
            call.index,
            gate.replace,
            record,
            replacement,
            continue_recorded=True,
            skip_turn=call.turn if twin.kind == "completion" else None,
        )

    def decisions(self, trace: Trace) -> Iterator[Decision]:
        facts = TraceFacts()
        for e in trace.events:
            if isinstance(e, ToolCall):
                hit = self.certify(e, facts, trace)
                if hit is not None:
                    yield self.decide(e, hit, facts, trace)
            facts.observe(e)

    def summary(self, trace: Trace, decisions: list[Decision]) -> dict[str, Any]:
        n_calls = sum(1 for e in trace.events if isinstance(e, ToolCall))
        accepted = [d for d in decisions if d.replace]
        return {
            "tool_calls": n_calls,
            "triggers": len(decisions),
            "accepted": len(accepted),
            "decisions": [d.record for d in decisions],
            "gate_score": max((_gate_score(d) for d in decisions), default=0.0),
            "settings": self._settings_dict,
        }


def _gate_score(d: Decision) -> float:
    """How strongly the gate points at an actor failure, for ranking (ROC-AUC / AP): the
    smaller of the two orientations' twin margins scaled by confidence, 0 without a judged
    pair (a certificate alone scores 0.1)."""
    gate = d.record.get("gate") or {}
    views = gate.get("orientations") or []
    if len(views) != 2:
        return 0.1
    vals = [
        max(v["margin"], 0.0) / 4.0 * v["confidence"] if v["prefers_twin"] else 0.0 for v in views
    ]
    return 0.1 + 0.9 * min(vals)
