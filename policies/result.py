"""`PolicyResult`: one policy's result on one trace, as the engine returns it and the run
reports (`policies.stats`) read it."""

from __future__ import annotations

from dataclasses import dataclass

from .jsonsafe import json_safe
from .trace import JsonDict
from .transitions import Transition


@dataclass(slots=True)
class PolicyResult:
    """One policy's result on one trace; `to_dict` is plain JSON data.

    ``applied``: the policy found at least one decision point (TwinCheck: a certificate held;
    checklist: a feedback message the rule could judge; VRR: a verify-repair loop with a
    headline rule; commit: an answer under challenge). ``not_applicable``: why the policy had
    no decision point or lacked the evidence it needs (then ``transition`` is
    ``not_applicable``, never ``same``, and the guarded trajectory is the actor's).
    ``unknown_reason``: why an outcome is unknown (the item goes to the annotation queue).
    ``continuation`` is ``exact`` when the guarded trajectory is the actor's, else ``spliced`` /
    ``recorded`` / ``truncated`` (see `policies.replay`). ``guarded_trajectory`` is None when it
    equals the actor's trace (to save storage). Both reasons are also in ``record``, so stored
    records carry them.
    """

    policy: str
    applied: bool
    record: JsonDict
    actor_success: bool | None
    guarded_success: bool | None
    transition: Transition
    continuation: str
    guarded_trajectory: list[JsonDict] | None
    not_applicable: str | None = None
    unknown_reason: str | None = None

    def to_dict(self) -> JsonDict:
        """Strict JSON (NaN/Infinity → None), ready for a JSONField."""
        out: JsonDict = json_safe(
            {
                "policy": self.policy,
                "applied": self.applied,
                "record": self.record,
                "actor_success": self.actor_success,
                "guarded_success": self.guarded_success,
                "transition": self.transition,
                "continuation": self.continuation,
                "guarded_trajectory": self.guarded_trajectory,
                "not_applicable": self.not_applicable,
                "unknown_reason": self.unknown_reason,
            }
        )
        return out
