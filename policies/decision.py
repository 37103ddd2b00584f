"""What every policy hands the replay engine: a `Decision` at one decision point (SPEC §4)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from .trace import JsonDict, Trace


@dataclass(slots=True)
class Decision:
    """One decision at a decision point.

    ``index`` is the first recorded event the guarded trajectory does not keep when
    ``replace`` is true: the guarded trajectory is ``events[:index] + replacement`` followed by
    the counterfactual continuation. ``continue_recorded`` says whether the remaining recorded
    actions are re-executed after the replacement in an environment (TwinCheck) or whether the
    replacement ends the episode (a committed answer); ``skip_turn`` drops the rest of that
    turn's recorded actions (a completion response ends the turn). ``guarded_success`` is set
    when the policy knows the guarded outcome from labels (e.g. it ships a labelled candidate).
    ``requires_unread_output``: the replacement is a different call, so re-executing the
    recorded suffix after it is valid only when no later recorded call reads the replaced
    call's output (SPEC §4); the engine checks and otherwise needs a live continuation.
    ``record`` is JSON-serialisable plain data.
    """

    policy: str
    index: int
    replace: bool
    record: JsonDict
    replacement: list[JsonDict] = field(default_factory=list)
    continue_recorded: bool = False
    guarded_success: bool | None = None
    skip_turn: int | None = None  # recorded actions of this turn are not re-executed
    requires_unread_output: bool = False


class GuardPolicy(Protocol):
    """A guard policy as the replay engine sees it."""

    name: str

    def decisions(self, trace: Trace) -> Iterator[Decision]:
        """Decisions in increasing ``index`` order; the engine stops pulling after the first
        accepted replacement (exact replay ends there)."""
        ...

    def summary(self, trace: Trace, decisions: list[Decision]) -> dict[str, Any]:
        """The policy's per-trace report (plain data) given the decisions the engine pulled."""
        ...
