"""TwinCheck: negative-twin replacement of tool calls (SPEC §5.1; Dai & Huang 2026).

For each ``tool_call`` in order: (1) every certificate in the settings is tried, and each one
that holds is recorded — with its twin, or the reason none could be built; (2) a twin must pass
the structural checks; (3) the judge sees the actor's call and the twin as A and B in both
orders, never the certificate, and the switch gate decides (`twincheck.gate`); (4) everything
is recorded. Replay stops at the first accepted replacement (`policies.replay`).

A twin generator (``TwinCheckPolicy(generator=...)``, e.g. the model backends'
`policies.llm.twin.TwinGenerator`) proposes repeat-after-error's evidence-gathering call, as
the paper's Fig. 5 generator does; the deterministic ranking stays in the record and stands in
when the generator produces nothing. Its twin passes the same structural checks and gate.

The continuation after a replacement: a twin that deletes the call or ends the turn
(completion, ask-user) is spliced onto the recorded suffix; a twin call is spliced only when no
later recorded call reads the replaced call's output — the engine checks that
(``Decision.requires_unread_output``) and otherwise reports "needs live continuation".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..certificates import ASK_USER_TEXT, CERTIFICATES, COMPLETION_TEXT, CertContext, Hit, Twin
from ..decision import Decision
from ..facts import TraceFacts, canonical_args
from ..heuristic_judge import HeuristicJudge
from ..judges import Judge, PairRequest, Proposal
from ..tool_profile import ToolProfile, build_profile
from ..trace import Event, JsonDict, Message, ToolCall, ToolResult, Trace
from .gate import GateDecision, failed_checks, structural_checks, switch_gate

__all__ = [
    "GateDecision",
    "TwinGenerator",
    "TwinProposal",
    "Twin",
    "TwinCheckPolicy",
    "TwinCheckSettings",
    "render_context",
    "structural_checks",
    "switch_gate",
]


@dataclass(frozen=True, slots=True)
class TwinCheckSettings:
    """Gate thresholds, certificates and twin texts. The paper fixes the protocol (both
    orders, fatal/non-fatal, confidence and 0–4 margin requirements) but the seed does not
    state the numbers; 0.7 and 2 are this project's defaults. ``inverse_table``: "auto" (the
    environment's declared table, else lexical), "lexical" or an environment's name;
    ``inverse_scope``: an inverse must undo a call of the current "turn" (default: the paper's
    examples all are) or of anywhere in the "trace". ``verify=False`` is the no-verifier
    control of Table 3: the judge is not asked and every twin that passes the structural
    checks replaces the call."""

    min_confidence: float = 0.7
    min_margin: float = 2.0
    certificates: tuple[str, ...] = (
        "inverse_action",
        "repeat_after_error",
        "unique_stale_argument",
    )
    completion_text: str = COMPLETION_TEXT
    ask_user_text: str = ASK_USER_TEXT
    context_events: int = 20
    inverse_table: str = "auto"
    inverse_scope: Literal["turn", "trace"] = "turn"
    verify: bool = True  # False: the no-verifier control (Table 3), every valid twin accepted

    def __post_init__(self) -> None:
        unknown = [c for c in self.certificates if c not in CERTIFICATES]
        if unknown:
            raise ValueError(
                f"unknown certificates {unknown}; choose from {', '.join(CERTIFICATES)}"
            )
        if self.inverse_scope not in ("turn", "trace"):
            raise ValueError(f"inverse_scope must be 'turn' or 'trace', not {self.inverse_scope!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_confidence": self.min_confidence,
            "min_margin": self.min_margin,
            "certificates": list(self.certificates),
            "completion_text": self.completion_text,
            "ask_user_text": self.ask_user_text,
            "context_events": self.context_events,
            "inverse_table": self.inverse_table,
            "inverse_scope": self.inverse_scope,
            "verify": self.verify,
        }


class TwinProposal(Protocol):
    """What a twin generator returns: ``call`` ({"name", "arguments"}) when its proposal
    passed the generator's own checks, else None with ``error``; ``record``: the model call's
    reference, for the decision record (`policies.llm.twin.TwinProposal`)."""

    @property
    def call(self) -> dict[str, Any] | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def record(self) -> dict[str, Any]: ...


#: ``(call, facts, trace) -> TwinProposal`` at a repeat-after-error point, ``facts`` being the
#: prefix before ``call`` (the paper's generator, App. Fig. 5: "the generator proposes an
#: evidence-gathering call"); `policies.llm.twin.TwinGenerator` is one.
TwinGenerator = Callable[[ToolCall, TraceFacts, Trace], TwinProposal]


def with_generated_twin(hit: Hit, proposal: TwinProposal) -> Hit:
    """A repeat-after-error hit with the generator's twin; when the generator produced none,
    the deterministic twin stands and the record says why."""
    details = {**hit.details, "generator": {"error": proposal.error, **dict(proposal.record)}}
    call = proposal.call
    if call is not None:
        args = call.get("arguments")
        twin = Twin("call", str(call.get("name", "")), dict(args) if isinstance(args, dict) else {})
        why = "model-generated evidence-gathering call (the deterministic ranking: candidates)"
        return Hit(hit.certificate, details, twin, why)
    return Hit(
        hit.certificate, details, hit.twin, f"generator: {proposal.error}; {hit.twin_reason}"
    )


def render_context(events: list[Event], limit: int) -> str:
    """The trace so far as text, the last ``limit`` events (what a remote judge is sent)."""
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


def _replacement(twin: Twin, call: ToolCall, trace: Trace, certificate: str) -> list[JsonDict]:
    meta = {
        "guarded": True,
        "policy": "twincheck",
        "certificate": certificate,
        "replaces": call.index,
    }
    if twin.kind == "call":
        return [
            {
                "trace_id": trace.trace_id,
                "type": "tool_call",
                "call_id": f"{call.call_id or call.index}~twin",
                "name": twin.name,
                "arguments": dict(twin.arguments),
                "turn": call.turn,
                "meta": meta,
            }
        ]
    if twin.kind in ("completion", "ask_user"):
        return [
            {
                "trace_id": trace.trace_id,
                "type": "message",
                "role": "assistant",
                "content": twin.text,
                "turn": call.turn,
                "meta": meta,
            }
        ]
    return []


class TwinCheckPolicy:
    """TwinCheck as a replay policy (SPEC §4, §5.1)."""

    name = "twincheck"

    def __init__(
        self,
        settings: TwinCheckSettings | None = None,
        judge: Judge | None = None,
        generator: TwinGenerator | None = None,
    ) -> None:
        self.settings = settings or TwinCheckSettings()
        self.judge = judge or HeuristicJudge()
        self.generator = generator
        self._settings_dict = self.settings.to_dict()
        self._certs = [(n, CERTIFICATES[n]) for n in self.settings.certificates]

    def certify(self, call: ToolCall, ctx: CertContext) -> list[Hit]:
        """Every certificate that holds at ``call``, in the settings' order; with a twin
        generator, repeat-after-error's twin is the generator's when it produced one."""
        hits = [hit for _name, cert in self._certs if (hit := cert(call, ctx)) is not None]
        if self.generator is not None:
            hits = [
                with_generated_twin(h, self.generator(call, ctx.facts, ctx.trace))
                if h.certificate == "repeat_after_error"
                else h
                for h in hits
            ]
        return hits

    def decide(self, call: ToolCall, hit: Hit, ctx: CertContext, pair_id: str) -> Decision:
        s = self.settings
        twin = hit.twin
        record: JsonDict = {
            "call_index": call.index,
            "call_id": call.call_id,
            "call": {"name": call.name, "arguments": call.arguments},
            "certificate": {"name": hit.certificate, **hit.details},
            "twin": twin.to_dict() if twin is not None else None,
            "twin_reason": hit.twin_reason,
            "checks": None,
            "pair": pair_id if twin is not None else None,
            "judgments": [],
            "gate": None,
            "judge": self.judge.name,
            "settings": self._settings_dict,
        }
        if twin is None:
            record["gate"] = {"replace": False, "reason": f"no twin: {hit.twin_reason}"}
            return Decision(self.name, call.index, False, record)
        checks = structural_checks(twin, call, ctx.facts, ctx.profile)
        record["checks"] = checks
        if not checks["passed"]:
            failed = ", ".join(failed_checks(checks))
            record["gate"] = {
                "replace": False,
                "reason": f"twin failed structural checks ({failed})",
                "orientations": [],
            }
            return Decision(self.name, call.index, False, record)
        trace, facts = ctx.trace, ctx.facts
        if s.verify:
            actor = Proposal("call", call.name, dict(call.arguments))
            tw = _proposal(twin)
            context = (
                render_context(trace.events[: call.index], s.context_events)
                if getattr(self.judge, "reads_context", True)
                else ""
            )
            req = PairRequest(pair_id, "actor_first", actor, tw, context, trace, facts)
            v1 = self.judge.judge(req)
            v2 = self.judge.judge(
                PairRequest(pair_id, "twin_first", tw, actor, context, trace, facts)
            )
            gate = switch_gate(v1, v2, s)
            record["judgments"] = [
                {"orientation": "actor_first", **v1.to_dict()},
                {"orientation": "twin_first", **v2.to_dict()},
            ]
        else:
            gate = GateDecision(True, "no verifier (control): a valid twin is accepted", [])
            record["judge"] = None
        record["gate"] = gate.to_dict()
        ends_turn = twin.kind in ("completion", "ask_user")
        return Decision(
            self.name,
            call.index,
            gate.replace,
            record,
            _replacement(twin, call, trace, hit.certificate),
            continue_recorded=True,
            skip_turn=call.turn if ends_turn else None,
            requires_unread_output=twin.kind == "call",
        )

    def context(self, trace: Trace, facts: TraceFacts, profile: ToolProfile) -> CertContext:
        s = self.settings
        return CertContext(
            trace, facts, profile, s.inverse_scope, s.completion_text, s.ask_user_text
        )

    def decisions(self, trace: Trace) -> Iterator[Decision]:
        calls = [i for i, e in enumerate(trace.events) if type(e) is ToolCall]
        if not calls:
            return  # no decision point (most non-agent traces): skip the facts entirely
        facts = TraceFacts()
        profile = build_profile(trace, self.settings.inverse_table)
        ctx = self.context(trace, facts, profile)
        for e in trace.events[: calls[-1] + 1]:
            if isinstance(e, ToolCall):
                base = f"{trace.trace_id}:{e.call_id or 'e' + str(e.index)}"
                pairs: set[str] = set()
                for hit in self.certify(e, ctx):
                    # One pair per distinct twin at this call; the first keeps the plain id
                    # that recorded and human verdicts are keyed by.
                    pair = base if not pairs else f"{base}#{hit.certificate}"
                    if hit.twin is not None:
                        pairs.add(pair)
                    yield self.decide(e, hit, ctx, pair)
            facts.observe(e)

    def summary(self, trace: Trace, decisions: list[Decision]) -> dict[str, Any]:
        n_calls = sum(type(e) is ToolCall for e in trace.events)
        return {
            "tool_calls": n_calls,
            "triggers": len(decisions),
            "accepted": sum(1 for d in decisions if d.replace),
            "decisions": [d.record for d in decisions],
            "gate_score": max((gate_score(d.record) for d in decisions), default=0.0),
            "awaiting_review": _pairs(decisions, awaiting=True),
            "abstained": _pairs(decisions, awaiting=False),
            "settings": self._settings_dict,
        }


def _pairs(decisions: list[Decision], *, awaiting: bool) -> list[dict[str, Any]]:
    """Pairs the app should queue for review: awaiting a human verdict (``awaiting``), or
    where the judge abstained for lack of evidence."""
    out = []
    for d in decisions:
        gate = d.record.get("gate") or {}
        waiting = gate.get("awaiting_review") or []
        wanted = bool(waiting) if awaiting else bool(gate.get("abstained")) and not waiting
        if wanted:
            out.append(
                {
                    "pair": d.record["pair"],
                    "call_index": d.index,
                    "certificate": d.record["certificate"]["name"],
                    "orientations": list(waiting) or ["actor_first", "twin_first"],
                }
            )
    return out


def gate_score(record: dict[str, Any]) -> float:
    """How strongly the gate points at an actor failure, for ranking (Fig. 2 ROC-AUC / AP):
    the smaller of the two orientations' twin margins (0–4, scaled to 0–1) times confidence;
    0.05 for a held certificate the judge did not score in both orders (a certificate alone is
    weak evidence), 0 without one."""
    gate = record.get("gate") or {}
    views = gate.get("orientations") or []
    if len(views) != 2 or any(v.get("error") or v.get("abstained") for v in views):
        return 0.05
    vals = [
        max(v["margin"], 0.0) / 4.0 * v["confidence"] if v["prefers_twin"] else 0.0 for v in views
    ]
    return 0.05 + 0.95 * min(vals)
