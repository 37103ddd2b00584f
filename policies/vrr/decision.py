"""Which VRR rule heads a loop, and the loop's decision record (SPEC §5.3; Wu et al. 2026 §2.2–2.3).

One headline rule per loop: VRR-Stop when its parameters are identified and its gain sign is
stable, VRR-Guard when the verifier cannot discriminate (J < ``j_min``) or the sign is not
identifiable — the paper's two reasons for the fallback — and *not applicable* when the
parameters the rule needs are missing and its decision depends on them (never a silent
fallback to Guard). The other rule's
choice is kept under ``alternatives`` for the paper table only; it is never a second headline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .evidence import RHO_CONSEQUENCE
from .rule import (
    Round,
    SignMemo,
    StopResult,
    VrrParams,
    VrrSettings,
    guard_rule,
    sign_identifiable,
    stop_round_without,
    stop_rule,
    unidentified,
)

NO_ROUNDS = "no verify-repair rounds"


class RuleChoice(NamedTuple):
    mode: str | None  # "stop" | "guard" | None = not applicable
    reason: str
    agreement: float | None  # bootstrap sign agreement, when checked
    stop: StopResult | None  # VRR-Stop's result, when it can be computed


def choose_rule(
    rounds: Sequence[Round],
    params: VrrParams | None,
    settings: VrrSettings,
    sign_memo: SignMemo | None = None,
) -> RuleChoice:
    """Which rule heads the loop, and why.

    Preconditions, in the paper's order: Guard is estimation-free (forced by ``mode`` it needs
    nothing); the J check needs ρ0 and ρ1; VRR-Stop needs the prior and α, β — or, when α or β
    is not identified, a stop round that is the same for every value of it in [0, 1]
    (`stop_round_without`: use what is identified); its sign must be stable across the
    bootstrap draws."""
    missing = unidentified(params)
    stop: StopResult | None = None
    grid_note = ""
    if params is not None and not missing:
        stop = stop_rule(rounds, params, settings.tau)
    elif params is not None and missing and set(missing) <= {"alpha", "beta"}:
        bounds = settings.rate_bounds()
        same, k = stop_round_without(rounds, params, missing, settings.tau, bounds=bounds)
        if same:
            stop = StopResult(k, (), (), ())
            where = [
                f"{name} in [{bounds[name][0]:.3f}, {bounds[name][1]:.3f}]"
                if name in bounds
                else f"{name} in [0, 1]"
                for name in missing
            ]
            grid_note = (
                f"{', '.join(missing)} not identified; the stop round is the same for every "
                f"value of {' and '.join(where)}"
            )
    if settings.mode == "guard":
        return RuleChoice("guard", "guard forced by settings", None, stop)
    if params is None:
        return RuleChoice(
            None, "parameters not identified: no calibration for this group", None, None
        )
    if "rho0" in missing or "rho1" in missing:
        why = f"parameters not identified: {', '.join(missing)}; {RHO_CONSEQUENCE}"
        return RuleChoice(None, why, None, None)
    if settings.mode == "auto" and params.j < settings.j_min:
        why = f"J = {params.j:.3f} < j_min = {settings.j_min}: the verifier cannot discriminate"
        return RuleChoice("guard", why, None, stop)
    if stop is None:
        depends = " (the stop round depends on them)" if "prior" not in missing else ""
        return RuleChoice(
            None, f"parameters not identified: {', '.join(missing)}{depends}", None, None
        )
    if grid_note:
        return RuleChoice("stop", grid_note, None, stop)
    assert params is not None
    if settings.mode == "stop":
        return RuleChoice("stop", "stop forced by settings", None, stop)
    ok, reason, agreement = sign_identifiable(rounds, params, settings.samples, settings, sign_memo)
    return RuleChoice("stop" if ok else "guard", reason, agreement, stop)


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


def vrr_decide(
    rounds: Sequence[Round],
    settings: VrrSettings,
    settings_dict: dict[str, Any] | None = None,
    sign_memo: SignMemo | None = None,
) -> VrrDecision:
    """The headline rule for this loop and the round it ships (see module docstring).
    ``settings_dict``: ``settings.to_dict()`` when the caller keeps it (a policy deciding many
    loops under one settings object: the conversion costs more than a short loop's rule);
    ``sign_memo``: the caller's memo of sign checks (`policies.vrr.rule.SignMemo`), likewise."""
    sd = settings_dict if settings_dict is not None else settings.to_dict()
    n = len(rounds)
    if n == 0:
        return VrrDecision("none", NO_ROUNDS, 0, None, None, NO_ROUNDS, settings=sd)
    actor_round = n - 1
    guard_round, incumbents, margins = guard_rule(rounds, settings)
    mode, reason, agreement, result = choose_rule(rounds, settings.params, settings, sign_memo)
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
        settings=sd,
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
