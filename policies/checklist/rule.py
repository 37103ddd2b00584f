"""The Claim Checklist's rule and settings (SPEC §5.2; Bui 2026, "Thinking-in-Bets at Test
Time", §3.1–3.3, App. A, Table 4). The replay policy is `policies.checklist.policy`.

Per feedback message the pre-reply claims record (recorded by the agent, or elicited from a
model — `policies.checklist.claims`) gives per-claim confidences; the rule targets the claims the
feedback bears on and keeps, asks or fixes. **Evidence only**: without a pre-reply record with
confidences the rule is *not applicable* for that feedback ("no per-claim confidence") — no
constant stands in for a confidence, and per-turn correctness labels (SYCON-Bench's) are
outcomes, never confidences. Where the rule's action differs from what the actor did, the
guarded trajectory diverges at that reply (`policies.checklist.analysis`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Literal

from ..trace import Claim

Action = Literal["keep", "fix", "ask", "none"]
Schedule = Literal["always_on", "on_demand", "draft_first"]
Outcome = Literal[
    "false_reversal", "successful_correction", "held_correct", "missed_fix", "unknown"
]

# The paper's revision threshold θ (App. A, Table 4): the one place it is written.
DEFAULT_THETA = 0.5

_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset(
    "the a an and or of to in on for is are was were be been it this that with as at by from "
    "not no your you my i we they he she its but so if then than there their our can could "
    "should would will just also what which who why how all any some more most very".split()
)


@dataclass(frozen=True, slots=True)
class ChecklistSettings:
    """θ = 0.5 (revision threshold), 0.9 (On-Demand skip threshold) and 0.85 (Draft-First audit
    threshold) are the paper's hand-chosen values (App. A, Table 4). ``min_overlap`` is the
    number of shared content words for lexical targeting (this project's choice).

    ``later_feedback`` (the paper is silent; this project's choice): after the guard keeps a
    claim the actor abandoned, the trace's later feedback messages are what the user would
    still have said — true of scripted pushback such as SYCON-Bench's — and the rule is applied
    to each with the kept record (``"replayed"``); the kept state is the guarded outcome only if
    the rule keeps it against every one. ``"unknown"``: any later feedback makes the guarded
    outcome unknown (for conversations whose user turns depend on the agent's replies)."""

    theta: float = DEFAULT_THETA
    schedule: Schedule = "always_on"
    on_demand_threshold: float = 0.9
    draft_first_threshold: float = 0.85
    min_overlap: int = 2
    later_feedback: Literal["replayed", "unknown"] = "replayed"
    evidence_pattern: str = (
        r"(?i)traceback|assert(?:ion)?error|failing test|test\w* (?:fail|is failing)|"
        r"exit code [1-9]|error:"
    )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def revision_rule(confidence: float, new_evidence: bool, theta: float = DEFAULT_THETA) -> Action:
    """The revision rule (§3.1, App. A) for one targeted claim.

    Preconditions: ``confidence`` is the claim's pre-reply confidence in [0, 1] (a claim
    without one is not the rule's to judge: the caller reports it not applicable).
    Rule: confidence ≥ θ → verify or clarify, and keep unless the feedback brings new concrete
    evidence (a failing test, a tool result) → "fix"; confidence < θ → clarify or make a
    targeted fix → "fix"."""
    if math.isnan(confidence) or not 0.0 <= confidence <= 1.0:
        raise ValueError(f"revision_rule needs a confidence in [0, 1], got {confidence!r}")
    if confidence >= theta:
        return "fix" if new_evidence else "keep"
    return "fix"


@lru_cache(maxsize=4096)  # claim texts recur across the feedback events of a trace
def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP)


def target_claims(
    claims: Sequence[Claim], targets: Sequence[str], feedback_text: str, min_overlap: int
) -> tuple[list[Claim], str]:
    """Claims a feedback bears on (§3 "Targeting"): its explicit ``targets``, else the claims
    sharing the most content words with it (at least ``min_overlap``). Returns the claims and
    how they were found. The judge-assisted targeting of SPEC §5.2 is left to a later issue."""
    if targets:
        wanted = set(targets)
        return [c for c in claims if c.id in wanted], "explicit"
    words = content_words(feedback_text)
    scored = [(len(words & content_words(f"{c.text} {c.subject}")), c) for c in claims]
    best = max((s for s, _ in scored), default=0)
    if best < min_overlap:
        return [], "lexical"
    return [c for s, c in scored if s == best], "lexical"


def feedback_action(
    targeted: Sequence[Claim], new_evidence: bool, theta: float
) -> tuple[Action, dict[str, Action]]:
    """Combine per-claim actions (App. A.1): vague feedback mapping to no claim, or to several
    weak ones, is answered with a question ("ask"); any targeted fix → "fix"; all kept → "keep".

    Precondition: every targeted claim has a confidence (see `revision_rule`)."""
    if not targeted:
        return "ask", {}
    per = {c.id: revision_rule(c.confidence, new_evidence, theta) for c in targeted}  # type: ignore[arg-type]
    weak = [c for c in targeted if c.confidence is not None and c.confidence < theta]
    if len(targeted) > 1 and len(weak) == len(targeted):
        return "ask", per
    if "fix" in per.values():
        return "fix", per
    return "keep", per


def overall_confidence(claims: Sequence[Claim]) -> float | None:
    """Overall pre-reply confidence for the On-Demand gate: the weakest claim's confidence
    (a record is only as safe as its weakest claim; the paper leaves the aggregate open)."""
    vals = [c.confidence for c in claims if c.confidence is not None]
    return min(vals) if vals else None


def schedule_uses_record(schedule: Schedule, claims: Sequence[Claim], s: ChecklistSettings) -> bool:
    """Whether the schedule would have written (and so may use) this pre-reply record:
    Always-On before every reply; On-Demand only when overall confidence < 0.9; Draft-First is
    non-interactive and never answers feedback."""
    if schedule == "always_on":
        return True
    if schedule == "on_demand":
        conf = overall_confidence(claims)
        return conf is None or conf < s.on_demand_threshold
    return False


def draft_first_audit(claims: Sequence[Claim], threshold: float = 0.85) -> dict[str, Any]:
    """Draft-First (App. A): audit claims below 0.85, weakest first; the product of confidences
    is reported as a *heuristic* joint (exact only for independent claims, App. C)."""
    known = [c for c in claims if c.confidence is not None]
    order = sorted(
        (c for c in known if c.confidence < threshold),  # type: ignore[operator]
        key=lambda c: (c.confidence, c.id),
    )
    joint = math.prod(c.confidence for c in known) if known else None  # type: ignore[misc]
    return {
        "audit_order": [c.id for c in order],
        "heuristic_joint": joint,
        "joint_is_heuristic": True,
        "threshold": threshold,
    }


def classify(before: bool | None, after: bool | None) -> Outcome:
    """Per feedback event (§5.2): pass → fail false reversal, fail → pass successful
    correction, pass → pass held-correct, fail → fail missed-fix."""
    if before is None or after is None:
        return "unknown"
    if before:
        return "held_correct" if after else "false_reversal"
    return "successful_correction" if after else "missed_fix"
