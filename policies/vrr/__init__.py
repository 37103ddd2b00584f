"""Verify-repair-retry (SPEC §5.3): stop a verify-repair loop when another round is not
worth it, by a belief over the candidate's validity.

- `rule`: `VrrParams`, `VrrSettings`, the belief update and the stop and guard rules;
- `policy`: `VrrPolicy` (the replay policy); `decision`: `vrr_decide`, `choose_rule`;
- `loops`: a trace's loops as rounds (`loop_rounds`);
- `calibration`: EM calibration of the vote model (`calibrate`; imports numpy, so it is
  imported on demand, never by this package's import);
- `sim`: simulated loops (`simulate_loops`, `loop_events`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .calibration import calibrate, observations_from_traces
    from .decision import choose_rule, vrr_decide
    from .loops import loop_rounds
    from .policy import VrrPolicy
    from .rule import (
        Round,
        SignMemo,
        VrrParams,
        VrrSettings,
        belief_update,
        first_stop,
        guard_rule,
        marginal_gain,
        stop_rule,
    )
    from .sim import loop_events, simulate_loops

#: Public name -> the module in this package that defines it, imported on first use (PEP 562),
#: so importing one module of the package does not import the others.
_EXPORTS = {
    "Round": "rule",
    "SignMemo": "rule",
    "VrrParams": "rule",
    "VrrPolicy": "policy",
    "VrrSettings": "rule",
    "belief_update": "rule",
    "calibrate": "calibration",
    "choose_rule": "decision",
    "first_stop": "rule",
    "guard_rule": "rule",
    "loop_events": "sim",
    "loop_rounds": "loops",
    "marginal_gain": "rule",
    "observations_from_traces": "calibration",
    "simulate_loops": "sim",
    "stop_rule": "rule",
    "vrr_decide": "decision",
}

__all__ = [
    "Round",
    "SignMemo",
    "VrrParams",
    "VrrPolicy",
    "VrrSettings",
    "belief_update",
    "calibrate",
    "choose_rule",
    "first_stop",
    "guard_rule",
    "loop_events",
    "loop_rounds",
    "marginal_gain",
    "observations_from_traces",
    "simulate_loops",
    "stop_rule",
    "vrr_decide",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS)
