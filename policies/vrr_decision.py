"""Which VRR rule heads a loop, and the loop's decision record (SPEC §5.3; Wu et al. 2026 §2.2–2.3).

One headline rule per loop: VRR-Stop when its parameters are identified and its gain sign is
stable, VRR-Guard when the verifier cannot discriminate (J < ``j_min``) or the sign is not
identifiable — the paper's two reasons for the fallback — and *not applicable* when the
parameters the rule needs are missing (never a silent fallback to Guard). The other rule's
choice is kept under ``alternatives`` for the paper table only; it is never a second headline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .vrr import (
    Round,
    StopResult,
    VrrParams,
    VrrSettings,
    guard_rule,
    sign_identifiable,
    stop_rule,
    unidentified,
)

NO_ROUNDS = "no verify-repair rounds"


def choose_rule(
    rounds: Sequence[Round], params: VrrParams | None, settings: VrrSettings
) -> tuple[str | None, str, float | None]:
    """(``"stop"`` | ``"guard"`` | None = not applicable, why, bootstrap sign agreement).

    Preconditions, in the paper's order: Guard is estimation-free (forced by ``mode`` it needs
    nothing); the J check needs ρ0 and ρ1; VRR-Stop needs all five parameters; its sign must be
    stable across the bootstrap draws."""
    if settings.mode == "guard":
        return "guard", "guard forced by settings", None
    missing = unidentified(params)
    if params is None:
        return None, "parameters not identified: no calibration for this group", None
    if "rho0" in missing or "rho1" in missing:
        return None, f"parameters not identified: {', '.join(missing)}", None
    if settings.mode == "auto" and params.j < settings.j_min:
        return (
            "guard",
            f"J = {params.j:.3f} < j_min = {settings.j_min}: the verifier cannot discriminate",
            None,
        )
    if missing:
        return None, f"parameters not identified: {', '.join(missing)}", None
    if settings.mode == "stop":
        return "stop", "stop forced by settings", None
    ok, reason, agreement = sign_identifiable(rounds, params, settings.samples, settings)
    return ("stop" if ok else "guard"), reason, agreement


@dataclass(slots=True)
class VrrDecision:
    """Decision record for one loop (SPEC §5.3 report)."""

    mode: str  # "stop" | "guard" | "none"
    reason: str
    n_rounds: int
    actor_round: int | None  # the round the actor shipped (its last)
    shipped_round: int | None  # the headline rule's round; None = unknown (repairs past data)
    not_applicable: str | None = None
    unknown_reason: str | None = None
    stop_round: int | None = None  # set only when Stop is the headline
    guard_round: int | None = None  # set only when Guard is the headline
    alternatives: dict[str, Any] = field(default_factory=dict)
    beliefs: list[float] = field(default_factory=list)
    priors: list[float] = field(default_factory=list)
    gains: list[float] = field(default_factory=list)
    guard_incumbents: list[int] = field(default_factory=list)
    guard_margins: list[int | None] = field(default_factory=list)
    true_validity: list[bool | None] = field(default_factory=list)
    sign_agreement: float | None = None
    rounds_saved: int = 0
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def applied(self) -> bool:
        return self.not_applicable is None

    def to_dict(self) -> dict[str, Any]:
        out = {f: getattr(self, f) for f in self.__slots__}
        out["applied"] = self.applied
        return out


def vrr_decide(rounds: Sequence[Round], settings: VrrSettings) -> VrrDecision:
    """The headline rule for this loop and the round it ships (see module docstring)."""
    n = len(rounds)
    if n == 0:
        return VrrDecision("none", NO_ROUNDS, 0, None, None, NO_ROUNDS, settings=settings.to_dict())
    actor_round = n - 1
    guard_round, incumbents, margins = guard_rule(rounds, settings)
    params = settings.params
    result: StopResult | None = None
    if params is not None and not unidentified(params):
        result = stop_rule(rounds, params, settings.tau)
    mode, reason, agreement = choose_rule(rounds, params, settings)
    stop_status = "not_identified" if result is None else "stopped"
    if result is not None and result.stop_round is None:
        stop_status = "past_data"
    d = VrrDecision(
        mode=mode or "none",
        reason=reason,
        n_rounds=n,
        actor_round=actor_round,
        shipped_round=None,
        alternatives={
            "stop": result.stop_round if result else None,
            "stop_status": stop_status,
            "guard": guard_round,
        },
        beliefs=list(result.beliefs) if result else [],
        priors=list(result.priors) if result else [],
        gains=list(result.gains) if result else [],
        guard_incumbents=list(incumbents),
        guard_margins=list(margins),
        true_validity=[r.valid for r in rounds],
        sign_agreement=agreement,
        settings=settings.to_dict(),
    )
    if mode is None:
        d.not_applicable = reason
        d.shipped_round = actor_round  # nothing changes: the actor's round stands
        return d
    if mode == "guard":
        d.shipped_round = d.guard_round = guard_round
    else:
        assert result is not None
        d.stop_round = result.stop_round
        if result.stop_round is not None:
            d.shipped_round = result.stop_round
        elif settings.beyond_recorded == "ship_last":
            d.shipped_round = actor_round
            d.reason += "; gain > tau through the recorded rounds: the last round ships"
        else:
            d.unknown_reason = (
                "VRR-Stop would repair past the recorded rounds (gain > tau at every round); "
                "needs a live continuation"
            )
    if d.shipped_round is not None:
        d.rounds_saved = max(actor_round - d.shipped_round, 0)
    return d
