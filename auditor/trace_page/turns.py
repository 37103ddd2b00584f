"""The timeline grouped by turn: each event of a window knows its turn, and the first event of a
turn (in this window) carries the turn's heading — its number, how many events of the window it
holds, and the user's request that opens it — so the page can fold a turn and list turns in its
outline. Events without a turn (the header, most importers' extras) join the turn before them."""

from __future__ import annotations

from typing import Any


def group_by_turn(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mark each event dict (``view``, ``turn``, ``role``) with its effective ``turn`` and the
    first of each turn with ``turn_head`` (``turn``, ``count``, ``request``). Pure."""
    current: Any = None
    head: dict[str, Any] | None = None
    for item in events:
        raw = item.get("turn")
        turn = raw if isinstance(raw, int) and not isinstance(raw, bool) else current
        if head is None or turn != current:
            head = {"turn": turn, "count": 0, "request": ""}
            item["turn_head"] = head
        current = turn
        item["turn"] = turn
        head["count"] += 1
        if not head["request"] and item["view"].type == "message" and item.get("role") == "user":
            head["request"] = item["view"].summary
    return events
