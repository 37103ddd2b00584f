"""Durations, token counts and costs as people read them ("8.5 s", "177,276", "$0.0187"), and
"—" for a figure the source does not give (never 0)."""

from __future__ import annotations

NONE = "—"


def duration_text(ms: float | None) -> str:
    if ms is None:
        return NONE
    if ms < 1:
        return f"{ms:.2f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def tokens_text(n: float | None) -> str:
    return NONE if n is None else f"{round(n):,}"


def cost_text(usd: float | None) -> str:
    if usd is None:
        return NONE
    if usd == 0:
        return "$0"
    if usd < 0.01:
        return f"${usd:.4f}"
    if usd < 100:
        return f"${usd:.3f}"
    return f"${usd:,.2f}"
