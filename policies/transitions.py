"""Actor vs guarded outcome → transition (SPEC §5.5)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal

Transition = Literal["rescue", "harm", "same", "unknown"]
TRANSITIONS: tuple[Transition, ...] = ("rescue", "harm", "same", "unknown")


def transition(actor_success: bool | None, guarded_success: bool | None) -> Transition:
    """``rescue`` = fail → success, ``harm`` = success → fail, ``same`` when both are known and
    equal, ``unknown`` when either is unknown (needs annotation)."""
    if actor_success is None or guarded_success is None:
        return "unknown"
    if actor_success == guarded_success:
        return "same"
    return "rescue" if guarded_success else "harm"


def transition_counts(pairs: Iterable[tuple[bool | None, bool | None]]) -> dict[str, int]:
    counts = Counter(transition(a, g) for a, g in pairs)
    return {t: counts.get(t, 0) for t in TRANSITIONS}
