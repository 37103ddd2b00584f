"""Actor vs guarded outcome → transition (SPEC §5.5)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal

Transition = Literal["rescue", "harm", "same", "unknown", "not_applicable"]
TRANSITIONS: tuple[Transition, ...] = ("rescue", "harm", "same", "unknown", "not_applicable")
# The longest value; the app's column must hold it.
MAX_TRANSITION_LENGTH = max(len(t) for t in TRANSITIONS)


def transition(
    actor_success: bool | None,
    guarded_success: bool | None,
    not_applicable: str | None = None,
) -> Transition:
    """``not_applicable`` when the policy had no decision point or lacked the evidence it needs
    (the reason is given; it is never counted as ``same``); else ``rescue`` = fail → success,
    ``harm`` = success → fail, ``same`` when both are known and equal, ``unknown`` when either
    is unknown (needs annotation)."""
    if not_applicable:
        return "not_applicable"
    if actor_success is None or guarded_success is None:
        return "unknown"
    if actor_success == guarded_success:
        return "same"
    return "rescue" if guarded_success else "harm"


def transition_counts(pairs: Iterable[tuple[bool | None, bool | None]]) -> dict[str, int]:
    """Counts of every transition (all keys present) over applicable (actor, guarded) pairs."""
    counts = Counter(transition(a, g) for a, g in pairs)
    return {t: counts.get(t, 0) for t in TRANSITIONS}
