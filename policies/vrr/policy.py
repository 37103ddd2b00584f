"""VRR-Stop / VRR-Guard as a replay policy over a recorded verify-repair loop (SPEC §4, §5.3).

The actor ships its last round's candidate; the policy ships the round its headline rule picks
(`policies.vrr.decision`). When that is an earlier round, exact replay ends after that round
and the guarded trajectory commits its candidate: the guarded outcome is that candidate's label
(recorded, a human verdict or executed hidden tests — `policies.labels`), unknown without one.
When VRR-Stop would repair past the recorded rounds the guarded trajectory continues beyond the
trace: its outcome is unknown.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..decision import Decision
from ..repair_candidates import FOREIGN_CANDIDATE, foreign_candidate_ids
from ..trace import JsonDict, Trace
from .decision import vrr_decide
from .loops import loop_rounds, round_label_sources
from .rule import SignMemo, VrrSettings


class VrrPolicy:
    name = "vrr"

    def __init__(self, settings: VrrSettings | None = None) -> None:
        self.settings = settings or VrrSettings()
        self._last: tuple[Trace | None, dict[str, Any]] = (None, {})
        self._settings_dict = self.settings.to_dict()  # once: every record carries it
        self._sign_memo = SignMemo()  # real loops repeat their patterns (policies.vrr.rule)

    def analyse(self, trace: Trace) -> dict[str, Any]:
        if self._last[0] is trace:
            return self._last[1]
        rounds = loop_rounds(trace)
        if not any(r.votes for r in rounds):
            rounds = []  # candidates without a verifier (e.g. pushback answers): not a VRR loop
        d = vrr_decide(rounds, self.settings, self._settings_dict, self._sign_memo)
        foreign = foreign_candidate_ids(trace)
        if foreign and not rounds:  # every candidate answers another task: no loop of this one
            d.reason = d.not_applicable = FOREIGN_CANDIDATE
        record = d.to_dict()
        record["data_quality"] = {FOREIGN_CANDIDATE: foreign} if foreign else {}
        record["label_sources"] = round_label_sources(trace, rounds)
        record["actor_correct"] = rounds[-1].valid if rounds else None
        shipped = d.shipped_round
        record["guarded_correct"] = rounds[shipped].valid if shipped is not None else None
        record["round_events"] = [r.event_index for r in rounds]
        record["round_votes"] = [[r.accepts, r.votes] for r in rounds]  # δ sensitivity
        self._last = (trace, record)
        return record

    def decisions(self, trace: Trace) -> Iterator[Decision]:
        record = self.analyse(trace)
        if not record["applied"]:
            return
        events = record["round_events"]
        shipped, actor = record["shipped_round"], record["actor_round"]
        if shipped == actor:
            return  # the headline rule ships what the actor shipped: exact replay throughout
        replacement: list[JsonDict] = []
        if shipped is None:  # Stop repairs past the data: the trace's rounds, then the unknown
            cut = len(trace.events)
            replacement.append(
                {
                    "trace_id": trace.trace_id,
                    "type": "message",
                    "role": "assistant",
                    "content": "[further repair rounds: not recorded]",
                    "meta": {"guarded": True, "policy": self.name, "mode": record["mode"]},
                }
            )
        else:
            src = trace.events[events[shipped]]
            raw = dict(src.raw)
            raw["meta"] = {
                **src.meta,
                "guarded": True,
                "policy": self.name,
                "committed_round": shipped,
                "mode": record["mode"],
            }
            replacement.append(raw)
            cut = events[shipped + 1]
        yield Decision(
            self.name,
            cut,
            True,
            {"mode": record["mode"], "shipped_round": shipped},
            replacement,
            continue_recorded=False,
            guarded_success=record["guarded_correct"],
        )

    def summary(self, trace: Trace, decisions: list[Decision]) -> dict[str, Any]:
        return self.analyse(trace)
