"""How VRR's verdicts change with Guard's margin δ, which the paper leaves open (§2.3: "a
sufficient margin", no value). A fold over VRR decision records: for each margin in `MARGINS`,
the loops Guard heads are decided again from their recorded votes (``round_votes``), the others
keep their round, and each loop's transition is counted from the rounds' labels — so a reader
sees when a run's result hangs on the choice of δ."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..transitions import transition
from .rule import Round, VrrSettings, guard_rule

#: The margins compared: fixed δ of 1–3 votes, and δ(n) = ⌈f·n⌉ for f = 0.5 and 0.6.
MARGINS: dict[str, dict[str, Any]] = {
    "delta=1": {"delta": 1},
    "delta=2": {"delta": 2},
    "delta=3": {"delta": 3},
    "ceil(0.5n)": {"delta_fraction": 0.5},
    "ceil(0.6n)": {"delta_fraction": 0.6},
}
KINDS = ("rescue", "harm", "same", "unknown", "not_applicable")


def _valid(tv: list[Any], k: Any) -> bool | None:
    if not isinstance(k, int) or not 0 <= k < len(tv) or tv[k] is None:
        return None
    return bool(tv[k])


class DeltaSensitivity:
    """VRR transition counts per margin (`MARGINS`), one decision record at a time."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter[str]] = {m: Counter() for m in MARGINS}

    def add(self, rec: Mapping[str, Any]) -> None:
        if rec.get("not_applicable"):
            for c in self.counts.values():
                c["not_applicable"] += 1
            return
        tv = list(rec.get("true_validity") or [])
        actor_round = rec.get("actor_round")
        actor = _valid(tv, actor_round)
        votes = rec.get("round_votes") or []
        settings = rec.get("settings") or {}
        for name, margin in MARGINS.items():
            shipped = rec.get("shipped_round")
            if rec.get("mode") == "guard" and len(votes) == len(tv):
                rounds = [Round(k, int(a), int(n)) for k, (a, n) in enumerate(votes)]
                unanimous = bool(settings.get("unanimous_replaces", True))
                variant = VrrSettings(unanimous_replaces=unanimous, **margin)
                shipped = guard_rule(rounds, variant)[0]
            guarded = actor if shipped == actor_round else _valid(tv, shipped)
            self.counts[name][transition(actor, guarded)] += 1

    def result(self) -> dict[str, dict[str, int]]:
        return {m: {k: c[k] for k in KINDS} for m, c in self.counts.items()}
