"""VRR-Stop / VRR-Guard as a replay policy over a recorded verify-repair loop (SPEC §4, §5.3).

The actor ships its last round's candidate; the policy ships the round `vrr_decide` picks.
When that is an earlier round, exact replay ends after that round and the guarded trajectory
commits its candidate; the guarded outcome is that candidate's label when it has one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .decision import Decision
from .trace import JsonDict, Trace
from .vrr import VrrSettings, vrr_decide
from .vrr_loops import loop_rounds


class VrrPolicy:
    name = "vrr"

    def __init__(self, settings: VrrSettings | None = None) -> None:
        self.settings = settings or VrrSettings()

    def decisions(self, trace: Trace) -> Iterator[Decision]:
        rounds = loop_rounds(trace)
        if not any(r.votes for r in rounds):
            return  # candidates without a verifier (e.g. pushback answers): not a VRR loop
        d = vrr_decide(rounds, self.settings)
        record = d.to_dict()
        record["actor_correct"] = rounds[-1].valid
        record["guarded_correct"] = (
            rounds[d.shipped_round].valid if d.shipped_round is not None else None
        )
        shipped = d.shipped_round
        assert shipped is not None
        replace = shipped != d.actor_round
        replacement: list[JsonDict] = []
        if replace:
            src = trace.events[rounds[shipped].event_index]
            raw = dict(src.raw)
            raw["meta"] = {
                **src.meta,
                "guarded": True,
                "policy": self.name,
                "committed_round": shipped,
                "mode": d.mode,
            }
            replacement.append(raw)
            cut = rounds[shipped + 1].event_index
        else:
            cut = rounds[-1].event_index
        yield Decision(
            self.name,
            cut,
            replace,
            record,
            replacement,
            continue_recorded=False,
            guarded_success=rounds[shipped].valid,
        )

    def summary(self, trace: Trace, decisions: list[Decision]) -> dict[str, Any]:
        if decisions:
            return decisions[0].record
        return vrr_decide([], self.settings).to_dict()
