"""What every certificate shares: the twin it proposes, the hit it reports, the context it
reads, and the registry (SPEC §5.1 step 1; Dai & Huang 2026, §3 and App. Figures 4–6).

A certificate is a function ``(call, context) -> Hit | None``: ``None`` when its failure
hypothesis does not hold at this call; a `Hit` when it holds — with the twin, or with
``twin=None`` and the reason none could be built, so that every held certificate is recorded
and recall can be measured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..facts import TraceFacts
from ..tool_profile import ToolProfile
from ..trace import ToolCall, Trace

TwinKind = Literal["call", "completion", "delete", "ask_user"]

#: The fixed completion response (TwinCheck App. Fig. 4: "the fixed completion response").
COMPLETION_TEXT = "The requested operation is complete."
#: The fixed ask-user response when no grounded evidence-gathering call exists (this project's
#: choice; the paper's Fig. 5 only shows the evidence-gathering twin).
ASK_USER_TEXT = (
    "That step failed again with the same request. Before I retry, could you confirm the "
    "details or tell me how you would like to proceed?"
)


@dataclass(frozen=True, slots=True)
class Twin:
    """A negative twin: a call, the completion response, an ask-user reply (both end the
    turn) or deleting the actor's call."""

    kind: TwinKind
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "arguments": dict(self.arguments),
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class Hit:
    """A held certificate: ``details`` are the preconditions' evidence (plain data);
    ``twin_reason`` says why this twin was chosen, or why none could be built."""

    certificate: str
    details: dict[str, Any]
    twin: Twin | None
    twin_reason: str = ""


@dataclass(slots=True)
class CertContext:
    """What a certificate may read: the trace prefix's facts, the trace's tool profile, and
    the settings that shape twins. The call being judged is passed separately; nothing after
    it is visible (``facts`` covers ``events[:call.index]`` only)."""

    trace: Trace
    facts: TraceFacts
    profile: ToolProfile
    inverse_scope: Literal["turn", "trace"] = "turn"
    completion_text: str = COMPLETION_TEXT
    ask_user_text: str = ASK_USER_TEXT


Certificate = Callable[[ToolCall, CertContext], Hit | None]
CERTIFICATES: dict[str, Certificate] = {}


def register_certificate(name: str) -> Callable[[Certificate], Certificate]:
    def deco(fn: Certificate) -> Certificate:
        CERTIFICATES[name] = fn
        return fn

    return deco


def turn_made_progress(ctx: CertContext) -> bool:
    """A successful state-changing call in the current turn (the paper's "the trace holds a
    successful operation", read per turn: a completion ends the turn)."""
    return any(
        a.status not in (None, "error") and not ctx.profile.read_only(a.call.name)
        for a in ctx.facts.turn_attempts()
    )


def completion_or_delete(ctx: CertContext) -> tuple[Twin, str]:
    """TwinCheck App. Fig. 4: delete the call; when the turn holds a successful operation and
    no unresolved failure, the fixed completion response (end the turn)."""
    if not turn_made_progress(ctx):
        return Twin("delete"), "delete: no successful state-changing call in this turn yet"
    failures = ctx.facts.unresolved_turn_failures()
    if failures:
        names = sorted({a.call.name for a in failures})
        return Twin("delete"), f"delete: unresolved failure in this turn ({', '.join(names)})"
    return (
        Twin("completion", text=ctx.completion_text),
        "completion: this turn holds a successful operation and no unresolved failure",
    )
